package callopt

import (
	"context"
	"testing"

	"go.uber.org/goleak"

	"github.com/rediskit/rediskit/redisurl"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestOptions(t *testing.T) {
	bg := context.Background()
	tests := []struct {
		name        string
		ctx         context.Context
		defRF       redisurl.ReadFrom
		wantRF      redisurl.ReadFrom
		defDurable  bool
		wantDurable bool
	}{
		{"nothing set: the client's defaults", bg, redisurl.Master, redisurl.Master, true, true},
		{"read preference set", WithReadFrom(bg, redisurl.Replica), redisurl.Master, redisurl.Replica, false, false},
		{"empty read preference: the default", WithReadFrom(bg, ""), redisurl.Nearest, redisurl.Nearest, false, false},
		{"durable off over a durable client", WithDurable(bg, false), redisurl.Master, redisurl.Master, true, false},
		{"durable on over a plain client", WithDurable(bg, true), redisurl.Master, redisurl.Master, false, true},
		{"both, nested", WithDurable(WithReadFrom(bg, redisurl.ReplicaPreferred), true), redisurl.Master, redisurl.ReplicaPreferred, false, true},
		{"inner value wins", WithReadFrom(WithReadFrom(bg, redisurl.Replica), redisurl.Master), redisurl.Nearest, redisurl.Master, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ReadFrom(tt.ctx, tt.defRF); got != tt.wantRF {
				t.Errorf("ReadFrom = %q, want %q", got, tt.wantRF)
			}
			if got := Durable(tt.ctx, tt.defDurable); got != tt.wantDurable {
				t.Errorf("Durable = %v, want %v", got, tt.wantDurable)
			}
		})
	}
}
