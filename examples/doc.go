// Package examples holds Tessera's example programs, each a main package in
// its own directory: hello (every locality greets every other). The
// distributed ALS, 1-D convolution and Cannon product programs join them as
// the primitives land.
package examples
