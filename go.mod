module github.com/tessera-amt/tessera

go 1.24.0

require (
	github.com/lesismal/nbio v1.6.12
	github.com/tinylib/msgp v1.6.5
	gonum.org/v1/gonum v0.17.0
	gonum.org/v1/netlib v0.0.0-20230729102104-8b8060e7531f
)

require (
	github.com/philhofer/fwd v1.2.0 // indirect
	golang.org/x/mod v0.23.0 // indirect
	golang.org/x/sync v0.12.0 // indirect
	golang.org/x/tools v0.30.0 // indirect
)

tool github.com/tinylib/msgp
