//go:build race

package runtime

// raceDetector is on: the collective tests trim their heaviest cases,
// which the detector slows tenfold.
const raceDetector = true
