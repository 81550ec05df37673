package safe

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// PanicError is a panic recovered from rediskit's own work: Value is what
// was passed to panic, Stack the goroutine's stack when it happened.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("rediskit: internal panic recovered (%v); please report it with the stack", e.Value)
}

// Unwrap returns Value when it is an error.
func (e *PanicError) Unwrap() error {
	if err, ok := e.Value.(error); ok {
		return err
	}
	return nil
}

// Call runs fn and returns the panic it raised as a *PanicError, or nil.
func Call(fn func()) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	fn()
	return nil
}

// Go runs fn in a new goroutine counted by wg (Add before, Done after).
// A panic in fn is handed to report (when not nil) as a *PanicError and
// ends only fn.
func Go(wg *sync.WaitGroup, report func(error), fn func()) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := Call(fn); err != nil && report != nil {
			report(err)
		}
	}()
}
