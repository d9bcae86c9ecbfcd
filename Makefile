# Tessera: the two commands a newcomer needs are `make demo` and `make test`.
GO      ?= go
BIN     := bin
LOCALITIES ?= 4
# Packages whose tests run a second time under the race detector: everything
# with goroutines of its own.
RACE_PKGS := ./parcel/ ./runtime/... ./agas/ ./trace/ ./primitives/ ./cmd/tessera/

.PHONY: demo test test-deps bench lint build clean

# OpenBLAS: with libopenblas-dev and liblapacke-dev installed (pkg-config
# finds openblas and lapacke), the commands are built with -tags openblas,
# and `make test` runs the primitives' tests a second time with the tag.
HAVE_OPENBLAS = pkg-config --exists openblas lapacke 2>/dev/null
# Expanded when a recipe runs, so a build after test-deps sees the OpenBLAS
# that test-deps installed.
BLAS_TAGS = $(shell $(HAVE_OPENBLAS) && echo -tags openblas)

build:
	$(GO) build $(BLAS_TAGS) -o $(BIN)/ ./cmd/tessera ./examples/...

# Distributed ALS on $(LOCALITIES) localities with tracing on (scripts/demo.sh):
# ends with the profile and the paths of the OTF2 archive and Perfetto JSON.
# RATINGS=file.csv uses a MovieLens ratings file instead of generated data.
demo: build
	LOCALITIES=$(LOCALITIES) bash scripts/demo.sh $(RATINGS)

# What the tests need from outside Go: slurm (srun, scontrol) and munge,
# otf2-tools and python3-otf2 (see scripts/test-deps.sh). Installed as root;
# elsewhere the tests that need them skip, loudly, and fail instead under
# CI=true.
test-deps:
	@if [ "$$(id -u)" = 0 ]; then bash scripts/test-deps.sh; \
	 else echo "test-deps: not root, so slurm is not installed: the slurm tests will skip"; fi

test: test-deps
	$(MAKE) build
	$(GO) vet ./...
	$(GO) test -count=1 -timeout 15m ./...
	$(GO) test -race -count=1 -timeout 15m $(RACE_PKGS)
	@if $(HAVE_OPENBLAS); then echo "$(GO) test -tags openblas ./primitives/ ./cmd/tessera/"; \
	  $(GO) vet -tags openblas ./primitives/ ./cmd/tessera/ && $(GO) test -tags openblas -count=1 -timeout 15m ./primitives/ ./cmd/tessera/; \
	 else echo "test: OpenBLAS is not installed (pkg-config openblas lapacke): the -tags openblas run is skipped"; fi
	@if pkg-config --exists ucx 2>/dev/null; then echo "$(GO) test -tags ucx ./parcel/"; \
	  $(GO) vet -tags ucx ./parcel/ && $(GO) test -tags ucx -count=1 -timeout 15m ./parcel/; \
	 else echo "test: UCX is not installed (pkg-config ucx): the -tags ucx run is skipped"; fi

bench:
	bash bench/run.sh

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet ./...
	@bash scripts/habits.sh
	@tmp=$$(mktemp -d); cp parcel/header_gen.go $$tmp/; \
	 (cd parcel && $(GO) generate ./...); \
	 if ! cmp -s $$tmp/header_gen.go parcel/header_gen.go; then \
	   echo "parcel/header_gen.go is stale: run 'go generate ./parcel' and commit it"; cp $$tmp/header_gen.go parcel/; rm -rf $$tmp; exit 1; fi; \
	 rm -rf $$tmp
	@# The library, commands and tests build elsewhere too (without the
	@# Linux-only parts: shared tiles, timerfd ticks, raw socket reads).
	GOOS=windows $(GO) vet ./...
	GOOS=darwin $(GO) vet ./...

clean:
	rm -rf $(BIN)
