//go:build !race

package main_test

// buildFlags and raceEnv: see race_test.go.
var buildFlags []string

const raceEnv = ""
