// Package trace is Tessera's APEX analogue: it observes every task through
// the runtime's TaskObserver hook (GUID, parent GUID, region name, lane),
// keeps profiles, samples counters, and writes timelines as OTF2 (in pure
// Go), Perfetto JSON, Prometheus metrics and OpenTelemetry spans.
//
// trace imports no other Tessera package: the runtime hands it what it
// observes through small interfaces, so tracing can be switched off at no
// cost.
//
// What exists so far is the OTF2 core, written and read natively in Go
// with the standard library only:
//
//   - OTF2Writer (CreateOTF2) writes an OTF2 3.0 archive: the anchor file,
//     the global definitions (strings, attributes, system tree nodes,
//     location groups, locations, regions with their role, metric members
//     and classes, clock properties) and, through an OTF2EventWriter per
//     location, Enter, Leave and Metric events with attribute lists such as
//     the UINT64 attributes "GUID" and "Parent GUID" that Traveler reads.
//     For the same content it writes the same .def and .evt bytes as
//     libotf2 (otf2_encoding.go holds the chunk and integer encoding).
//   - ReadOTF2 reads such an archive back (any chunk count, errors that
//     name the file) and OTF2Archive.PrintEvents prints its events the way
//     otf2-print does.
//
// The format notes and the golden archives written by libotf2 that the
// tests compare against are in testdata/otf2. The tracer itself, the
// samplers, the profile, Perfetto, Prometheus and OpenTelemetry outputs are
// not written yet.
package trace
