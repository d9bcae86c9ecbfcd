// Package trace is Tessera's APEX analogue: it observes every task through
// the runtime's TaskObserver hook (GUID, parent GUID, region name, lane),
// keeps profiles, samples counters, and writes timelines as OTF2 (in pure
// Go), Perfetto JSON, Prometheus metrics and OpenTelemetry spans.
//
// trace imports no other Tessera package: the runtime hands it what it
// observes through small interfaces, so tracing can be switched off at no
// cost.
//
// The tracer. A Tracer (NewTracer) writes one locality's part of a run's
// OTF2 archive in the run's trace directory: each worker lane is a location
// (id locality<<32 + lane, named "locality N lane M", in the location
// group "locality N") whose events go into a chunk buffer of its own,
// allocated once and written to DIR/tessera/ID.evt whenever it fills, under
// that lane's lock only; the steady state allocates nothing. Times are ns
// since the tracer's origin (just before it started). Enter carries
// the UINT64 attributes "GUID" and "Parent GUID"; a task that yields Leaves
// its region on its lane and Enters it again where it resumes, so every
// location's Enter/Leave pairs match and its times never go back. Regions
// (role TASK) are task names: action names as they are, a local task's Go
// function name without the directories of its import path (RegionName).
// StartSampler adds a location (lane number Lanes, "locality N samples")
// with a sample per period (100ms by default): one Metric event of one
// value per metric of SampleMetrics, all at the same time — process CPU
// utilisation (DOUBLE, %) and resident set size (from /proc, 0
// elsewhere), task queue length, calls in flight, parcels queued, parcels
// and bytes sent (UINT64). One value per record, integers as integers:
// Traveler, which reads otf2-print's text and keeps the first value of
// each METRIC line (and misreads numbers printed with an exponent), sees
// every metric of every locality.
//
// One archive per run. Region and metric references in a locality's event
// files are its own, and so is its clock's origin. Close writes the
// locality's part description, DIR/tessera.parts/LOC.json (host, origin,
// locations with event counts and time span, region names). MergeOTF2 —
// locality 0, at exit — waits for the parts of all localities (bounded),
// unifies their regions and writes the one global definition file
// DIR/tessera.def (strings, the two attributes, a system tree node per
// host, a location group per locality, the locations, regions, each
// locality's metrics named "NAME (locality N)" since Traveler tells
// metrics apart by name only, and the clock), the anchor DIR/tessera.otf2
// and, per location, a local definition file: REGION and METRIC mapping
// tables from its locality's references to the global ones and, for a
// locality whose origin is d ns after the earliest one, a constant clock
// offset of d. libotf2's readers and ReadOTF2 apply them, so all times are
// ns since the run's origin: small, exact in a double (a JavaScript viewer
// keeps every nanosecond), comparable across localities as their wall
// clocks were. The clock properties' global offset is the first event's
// time and their realtime timestamp its wall-clock time
// (OTF2ClockProperties.WallClock). Location names show where readers show
// definitions (otf2-print -G, python3-otf2, Vampir, the Perfetto export);
// Traveler reads only otf2-print's event lines, whose rows are location
// ids. The trace directory must be shared by all localities' hosts.
//
// A crash. A locality that dies writes no part: its event files stay behind
// but no definition names them. The survivors close their tracers when they
// fail, and locality 0 merges the parts that arrive within its wait (3s
// after a failure) into an archive of the surviving localities, logging
// which are missing. If locality 0 itself died, the other parts and event
// files are on disk without an anchor: MergeOTF2 on the directory (any
// process, with localities 0 to take whatever parts are there) writes the
// archive of those.
//
// The OTF2 core, written and read natively in Go with the standard library
// only:
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
//     name the file), applying each location's local definitions (REGION
//     and METRIC mapping tables, clock offsets interpolated as libotf2
//     does; otf2_local.go), and OTF2Archive.PrintEvents prints its events
//     the way otf2-print does.
//
// From an archive read back, ProfileFromOTF2 computes APEX-style flat
// profiles (Profile: per task name the count and the total, mean, min and
// max inclusive time of its tasks, the pieces of a yielded task summed, and
// the share of wall time × lanes; per locality and combined, as text or
// CSV), WritePerfetto writes Chrome trace-event JSON for the Perfetto UI (a
// track per lane, flows from parent to child task, counters for the
// metrics), and CheckOTF2 lists what is wrong with an archive (time order,
// times outside the clock's span, unmatched Enter/Leave, undefined
// references, unknown parent GUIDs).
// `tessera trace summary|export|check` runs them.
//
// Metrics and spans: NewCollector is a prometheus.Collector over one
// locality's counters (a Snapshot filled by a CounterSource — the runtime,
// which adds AGAS's and the distributed arrays'): tessera_tasks_total,
// tessera_parcels_sent_total with the label peer,
// tessera_agas_cache_hits_total, tessera_arrays_live and the rest, each
// with the label locality. Programs register it with their own
// prometheus.Registerer (runtime.Config.Metrics) or let each locality serve
// /metrics (runtime.Config.MetricsAddr, TESSERA_METRICS_ADDR,
// `tessera run --metrics-addr`); nothing registers globally. SpanHook is
// how the runtime reports spans — "call <action>" on the caller,
// "<action>" on the callee, Runtime.StartSpan for primitives — and carries
// the span context in the parcel header; OTelSpans implements it over an
// OpenTelemetry TracerProvider, so one trace covers every locality.
//
// The format notes, the golden archives written by libotf2 that the tests
// compare against, and the golden archive of a merged two-locality run
// (tessera-run) with otf2-print's text of it are in testdata/otf2.
package trace
