// Package affinity binds the processes a program starts to CPUs: the
// launcher's --bind core (cmd/tessera) and the benchmarks that place two
// processes on cores of their own (bench/pingpong). A process is bound
// from the fork on, so all its threads, whatever its program, inherit the
// binding; off Linux nothing is bound.
package affinity
