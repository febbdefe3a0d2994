// Package doccheck holds a test, and nothing else, that keeps README.md in step
// with the code: every Go block of the README is a verbatim excerpt of one of
// the packages' runnable examples (example_test.go), which `go test` compiles
// and runs, so the README's code compiles and does what it says.
package doccheck
