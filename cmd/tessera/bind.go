package main

// The --bind values of tessera run.
const (
	bindNone = "none" // the system places the localities (the default)
	bindCore = "core" // each locality on its own block of cores
)

// coreBlocks divides cpus among n localities in blocks, as slurm's block
// distribution does: with n <= len(cpus) locality i gets its own
// consecutive share; with more localities than CPUs, consecutive
// localities share a CPU (localities 0 and 1 on the first of two CPUs, 2
// and 3 on the second).
func coreBlocks(cpus []int, n int) [][]int {
	blocks := make([][]int, n)
	c := len(cpus)
	for i := range n {
		if n <= c {
			blocks[i] = cpus[i*c/n : (i+1)*c/n]
		} else {
			blocks[i] = cpus[i*c/n : i*c/n+1]
		}
	}
	return blocks
}
