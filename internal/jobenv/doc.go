// Package jobenv is the protocol between a launcher and the localities it
// starts: the environment variables that tell a process which locality of
// which job it is, and how to reach the others. It owns every TESSERA_*
// name, reads slurm's SLURM_* variables, and both writes the protocol (a
// launcher's side: Launch.Encode, Launch.Environ) and reads it (a
// locality's side: FromEnv), so the two cannot drift apart. The way back
// is its too: the failure record a locality leaves for the launcher
// (Failure, WriteFailure, ReadFailure), the exit statuses and phases it
// names, and the metrics port each locality derives from the job's
// (MetricsListenAddr).
//
// It neither starts processes nor opens connections; it does not know the
// runtime's Config. The runtime's Main is the one place that calls FromEnv
// and turns the Launch into a Config; `tessera run` and the process tests'
// launcher (internal/jobtest) call Encode.
//
// # The variables
//
// Set by a launcher (`tessera run`) for locality i of a job of N on this
// machine:
//
//	TESSERA_LOCALITY, TESSERA_NUM_LOCALITIES  i and N
//	TESSERA_NODE_CPUS                         the cores the localities share
//	TESSERA_ROOT_ADDR                         host:port of locality 0
//	TESSERA_ROOT_FD                           (locality 0) its inherited listener, RootFD
//	TESSERA_LISTEN_HOST                       host to listen on
//	TESSERA_SECRET                            the job secret, hex
//	TESSERA_JOB_ID                            the job's id, for people
//
// Under slurm (srun), slurm's own variables: SLURM_PROCID, SLURM_NTASKS,
// SLURM_STEP_NODELIST (or SLURM_NODELIST) in hostlist syntax, SLURM_JOB_ID,
// SLURM_STEP_ID, and SLURM_NODEID with SLURM_STEP_TASKS_PER_NODE (or
// SLURM_TASKS_PER_NODE) and SLURM_CPUS_ON_NODE for the localities on this
// node and their cores. Locality 0 is task 0 on the first host of the node
// list and listens on TESSERA_PORT, or on a port derived from the job and
// step ids (RootPortBase) so that concurrent steps do not clash; every
// other locality listens on a port of the kernel's choosing. The secret
// comes from TESSERA_SECRET or the file TESSERA_SECRET_FILE (default
// ~/.tessera/secret, created 0600 when missing; LoadSecret).
//
// With neither, the program is a job of one locality.
//
// The job's options, set by the flags of `tessera run` or by hand, in
// Options:
//
//	TESSERA_PARCELPORT      tcp (default) or nbio
//	TESSERA_PROGRESS        block (default) or poll
//	TESSERA_TCP_CONGESTION  the tcp parcelport's TCP congestion control
//	TESSERA_METRICS_ADDR    host:port; locality i serves /metrics on port+i
//	TESSERA_TRACE           directory of the run's OTF2 archive
//	TESSERA_TRACE_FORMAT    otf2 (default), or otf2,perfetto
//	TESSERA_PROFILE         screen or csv: the job's profile at exit
//	TESSERA_TRACE_SAMPLE    the sampler's period (default 100ms)
package jobenv
