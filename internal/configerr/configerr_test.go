package configerr

import (
	"errors"
	"fmt"
	"testing"
)

var errKind = errors.New("pkg: invalid config")

func TestErrorMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  Error
		want string
	}{
		{"field of Config", Error{Package: "sentinel", Struct: "Config", Field: "MasterName", Problem: "is required"},
			"sentinel: Config.MasterName is required"},
		{"indexed field", Error{Package: "multidb", Struct: "Config", Field: `Databases["main"].Weight`, Problem: "must be positive"},
			`multidb: Config.Databases["main"].Weight must be positive`},
		{"named config", Error{Package: "guard", Struct: "LimiterConfig", Field: "Limit", Problem: "must be positive"},
			"guard: LimiterConfig.Limit must be positive"},
		{"argument, no struct", Error{Package: "guard", Field: "client", Problem: "is nil"},
			"guard: client is nil"},
		{"whole struct", Error{Package: "guard", Struct: "CacheConfig", Problem: "TTL must not be negative"},
			"guard: CacheConfig TTL must not be negative"},
		{"no package", Error{Struct: "Config", Field: "X", Problem: "is wrong"}, "Config.X is wrong"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.err.Error(); got != tc.want {
				t.Errorf("Error() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestErrorMatching(t *testing.T) {
	for _, tc := range []struct {
		name   string
		err    error
		isKind bool
	}{
		{"with Kind", &Error{Package: "pkg", Struct: "Config", Field: "X", Problem: "p", Kind: errKind}, true},
		{"without Kind", &Error{Package: "pkg", Struct: "Config", Field: "X", Problem: "p"}, false},
		{"wrapped, with Kind", fmt.Errorf("open: %w", &Error{Field: "X", Kind: errKind}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := errors.Is(tc.err, errKind); got != tc.isKind {
				t.Errorf("errors.Is(%v, kind) = %t, want %t", tc.err, got, tc.isKind)
			}
			if errors.Is(tc.err, errors.New("pkg: invalid config")) {
				t.Error("matched an unrelated error with the same text")
			}
			var ce *Error
			if !errors.As(tc.err, &ce) || ce.Field != "X" {
				t.Errorf("errors.As(%v) = %v, want the *Error on X", tc.err, ce)
			}
		})
	}
}
