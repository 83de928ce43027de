package proctest

import (
	"fmt"
	"math"
	"strconv"
	"testing"
)

// AtMost says whether got is within an upper bound, and logs it as a
// target line (see Target).
func AtMost(b testing.TB, what string, got, bound float64, unit string) bool {
	b.Helper()
	return Target(b, what, "≤", got, bound, unit)
}

// AtLeast says whether got reaches a lower bound, and logs it as a
// target line (see Target).
func AtLeast(b testing.TB, what string, got, bound float64, unit string) bool {
	b.Helper()
	return Target(b, what, "≥", got, bound, unit)
}

// Target logs what was measured against a target, and whether it is met,
// as one line that cmd/internal/benchtable gathers into its targets table
// (a benchmark's log is printed under its result line):
//
//	target | client CPU per change, 500 modules × 1 file | ≤ 0.15 ms | 0.921 ms | not met
//
// It does not fail the benchmark: a target not met yet is a measure, not
// a broken build. op is "≤" or "≥".
func Target(b testing.TB, what, op string, got, bound float64, unit string) bool {
	b.Helper()
	met := got <= bound
	if op == "≥" {
		met = got >= bound
	}
	word := "met"
	if !met {
		word = "not met"
	}
	b.Logf("target | %s | %s %s | %s | %s", what, op, withUnit(bound, unit), withUnit(got, unit), word)
	return met
}

func withUnit(v float64, unit string) string {
	if unit == "×" || unit == "%" {
		return Num(v) + unit
	}
	return Num(v) + " " + unit
}

// Num is v to three significant digits, without an exponent or trailing
// zeros (0.000921, 0.15, 1.02, 612, 1020).
func Num(v float64) string {
	if v == 0 || math.IsInf(v, 0) || math.IsNaN(v) {
		return fmt.Sprint(v)
	}
	digits := 2 - int(math.Floor(math.Log10(math.Abs(v))))
	if digits < 0 {
		q := math.Pow(10, float64(-digits))
		return strconv.FormatFloat(math.Round(v/q)*q, 'f', 0, 64)
	}
	p := math.Pow(10, float64(digits))
	return strconv.FormatFloat(math.Round(v*p)/p, 'f', -1, 64)
}
