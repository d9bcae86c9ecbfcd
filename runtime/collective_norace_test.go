//go:build !race

package runtime

// raceDetector is off: the collective tests run in full.
const raceDetector = false
