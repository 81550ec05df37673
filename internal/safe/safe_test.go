package safe

import (
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
)

func TestCall(t *testing.T) {
	if err := Call(func() {}); err != nil {
		t.Fatalf("Call of a function that returns: %v", err)
	}
	err := Call(func() { panic(io.ErrUnexpectedEOF) })
	var pe *PanicError
	if !errors.As(err, &pe) || !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(string(pe.Stack), "safe_test.go") {
		t.Fatalf("Call of a function that panics: %v (%T)", err, err)
	}
	var s []int
	err = Call(func() { _ = s[3] }) // a runtime error, as a bad length would raise
	if !errors.As(err, &pe) || !strings.Contains(err.Error(), "index out of range") {
		t.Fatalf("Call of an out-of-range index: %v", err)
	}
}

func TestGoReportsAndEndsOnlyTheGoroutine(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var reported []error
	report := func(err error) { mu.Lock(); reported = append(reported, err); mu.Unlock() }
	ran := 0
	Go(&wg, report, func() { panic("bad reply") })
	Go(&wg, report, func() { mu.Lock(); ran++; mu.Unlock() })
	Go(&wg, nil, func() { panic("unreported") })
	wg.Wait()
	if len(reported) != 1 || ran != 1 || !strings.Contains(reported[0].Error(), "bad reply") {
		t.Fatalf("reported %v, ran %d", reported, ran)
	}
}
