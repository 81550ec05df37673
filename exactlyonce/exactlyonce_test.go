package exactlyonce

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConfig(t *testing.T) {
	if d := (Config{}).WithDefaults(); d.TTL != DefaultTTL || d.KeyPrefix != DefaultKeyPrefix {
		t.Errorf("defaults: %+v", d)
	}
	for _, tc := range []struct {
		name string
		cfg  Config
		hold time.Duration
		ok   bool
	}{
		{"defaults, a 10 s hold", Config{}, 10 * time.Second, true},
		{"exactly twice the hold", Config{TTL: 20 * time.Second}, 10 * time.Second, true},
		{"shorter than twice the hold", Config{TTL: 19 * time.Second}, 10 * time.Second, false},
		{"below a millisecond", Config{TTL: time.Microsecond}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.cfg.Check(tc.hold); (err == nil) != tc.ok {
				t.Errorf("Check = %v", err)
			}
		})
	}
}

func TestWith(t *testing.T) {
	ctx := context.Background()
	if _, set := Asked(ctx); set {
		t.Error("a bare context asks")
	}
	if on, set := Asked(With(ctx, true)); !on || !set {
		t.Error("With(true)")
	}
	if on, set := Asked(With(With(ctx, true), false)); on || !set {
		t.Error("the inner With wins")
	}
}

func TestErrors(t *testing.T) {
	ue := &UnsupportedError{Command: "blpop", Why: "a blocking command"}
	if !errors.Is(ue, ErrUnsupported) || !strings.Contains(ue.Error(), "blpop") || !strings.Contains(ue.Error(), "nothing was sent") {
		t.Errorf("UnsupportedError: %v", ue)
	}
	cause := errors.New("NOPERM no permissions")
	re := &RefusedError{Addr: "10.0.0.1:6379", Err: cause}
	if !errors.Is(re, cause) || !strings.Contains(re.Error(), "10.0.0.1:6379") || !strings.Contains(re.Error(), "NOPERM") {
		t.Errorf("RefusedError: %v", re)
	}
	te := &TokenKeyError{Key: "rkx1:{a}x:1"}
	if !strings.Contains(te.Error(), "did not run") {
		t.Errorf("TokenKeyError: %v", te)
	}
}
