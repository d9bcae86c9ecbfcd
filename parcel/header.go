package parcel

//go:generate go tool msgp -file header.go -o header_gen.go -tests=false -io=false

// Arrays in a received header are bounded before they are allocated, so a
// hostile header cannot ask for gigabytes with a few bytes (and the byte
// fields and chunk list, Bytes and Lengths, by the bytes there: see
// header_fields.go).
//
//msgp:limit arrays:65536 maps:1024

// HeaderVersion is the version of the parcel header this build writes and the
// only one it accepts. Bump it whenever a field is added, removed or changes
// meaning.
//
// Version 2 added Trace.
const HeaderVersion uint8 = 2

// Kind says what a parcel is for.
type Kind uint8

// The kinds of parcel.
const (
	// KindCall asks the destination to run Header.Action as a task. When
	// Header.Request is non-zero the caller waits for a KindReply.
	KindCall Kind = 1 + iota
	// KindReply carries the result of a call: Args and Chunks on success,
	// Code and Error on failure.
	KindReply
	// KindControl is runtime bookkeeping (rendezvous, barriers, shutdown).
	KindControl
	// KindHeartbeat proves that an idle connection is alive. The parcelport
	// consumes it; handlers never see one.
	KindHeartbeat
)

// String returns the name of the kind.
func (k Kind) String() string {
	switch k {
	case KindCall:
		return "call"
	case KindReply:
		return "reply"
	case KindControl:
		return "control"
	case KindHeartbeat:
		return "heartbeat"
	}
	return "kind(" + itoa(uint64(k)) + ")"
}

// Code classifies the failure carried by a reply.
type Code uint8

// Reply codes.
const (
	CodeOK            Code = iota // success
	CodeActionError               // the action returned an error
	CodeActionPanic               // the action panicked
	CodeUnknownAction             // no action of that name is registered
	CodeBadArgs                   // the arguments did not decode
	CodeShutdown                  // the locality is shutting down
)

// Header is the msgp-encoded head of every parcel. It is encoded as a tuple
// whose first element is Version, so a reader can refuse a header of another
// version before it interprets anything else.
//
//msgp:tuple Header
type Header struct {
	Version uint8   // HeaderVersion
	Kind    Kind    // what the parcel is for
	Source  uint32  // sending locality
	Dest    uint32  // receiving locality
	Action  string  // action name (calls) or control verb (control)
	Request uint64  // id pairing a call with its reply; 0: no reply wanted
	Parent  uint64  // GUID of the task that sent the call
	Code    Code    // reply status
	Error   string  // reply error text when Code != CodeOK
	Args    Bytes   // small arguments, msgp-encoded by the runtime
	Trace   Bytes   // calls: the caller's trace context, opaque here (runtime's span hook); empty: none
	Chunks  Lengths // lengths of the raw chunks that follow the header; the last field
}
