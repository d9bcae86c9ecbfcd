// Package trace is Tessera's APEX analogue: it observes every task through
// the runtime's TaskObserver hook (GUID, parent GUID, region name, lane),
// keeps profiles, samples counters, and writes timelines as OTF2 (in pure
// Go), Perfetto JSON, Prometheus metrics and OpenTelemetry spans.
//
// trace imports no other Tessera package: the runtime hands it what it
// observes through small interfaces, so tracing can be switched off at no
// cost.
//
// The package is being built; this comment states its role in the layout.
package trace
