package sentinel

import (
	"crypto/tls"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rediskit/rediskit/internal/testkit"
	"github.com/rediskit/rediskit/lab"
)

func diagConfig(l *lab.Lab) Config {
	cfg := l.Config()
	return Config{
		MasterName:       l.MasterName(),
		SentinelAddrs:    l.SentinelAddrs(),
		Username:         cfg.Username,
		Password:         cfg.Password,
		SentinelPassword: cfg.SentinelPassword,
		TLSConfig:        l.TLSConfig(),
	}
}

func stages(d *Diagnosis) []Stage {
	var out []Stage
	for _, s := range d.Steps {
		out = append(out, s.Stage)
	}
	return out
}

func TestDiagnoseHealthyTLSDeployment(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	// 10 ms on each node: the election excludes a replica whose RTT is 3 ×
	// the master's however small both are. On bare loopback (tens of µs)
	// scheduling jitter alone reaches that ratio in a few percent of probe
	// rounds, and a loaded machine has delayed a 2 ms PING by 14 ms.
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, TLS: true, Password: "data-pw", SentinelPassword: "sentinel-pw",
		Nodes: []lab.NodeConfig{{Latency: 10 * time.Millisecond}, {Latency: 10 * time.Millisecond}}})
	d, err := Diagnose(ctx, diagConfig(l))
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	want := []Stage{StageSentinel, StageSentinel, StageSentinel, StageTCP, StageTLS, StageAuth, StageHello, StagePing, StageRole, StageReplica}
	if got := stages(d); strings.Join(toStrings(got), ",") != strings.Join(toStrings(want), ",") {
		t.Fatalf("stages %v, want %v\n%s", got, want, d)
	}
	for i, st := range d.Steps {
		if st.Sentinel != (i < 3) {
			t.Errorf("step %d (%s on %s): Sentinel = %v", i, st.Stage, st.Server, st.Sentinel)
		}
	}
	out := d.String()
	for _, line := range []string{
		`sentinel ` + l.SentinelAddrs()[0] + ` named ` + l.Node(0).Addr() + ` as the master of "mymaster"`,
		"master with 1 connected replica(s)",
		"read-only work would use replica " + l.Node(1).Addr(),
	} {
		if !strings.Contains(out, line) {
			t.Errorf("trace lacks %q:\n%s", line, out)
		}
	}
	if strings.Contains(out, "-pw") {
		t.Fatalf("a password is in the trace:\n%s", out)
	}
	t.Logf("\n%s", out)
}

func TestDiagnoseNamesTheFailingStageAndServer(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 3, TLS: true, Password: "data-pw"})
	master := l.Node(0).Addr()

	t.Run("wrong password", func(t *testing.T) {
		opts := diagConfig(l)
		opts.Password = "wrong-pw"
		d, err := Diagnose(ctx, opts)
		var se *StageError
		if !errors.As(err, &se) || se.Stage != StageAuth || se.Server != master {
			t.Fatalf("got %v, want AUTH failed on %s\n%s", err, master, d)
		}
		if !strings.HasPrefix(err.Error(), "AUTH failed on "+master+": WRONGPASS") || strings.Contains(err.Error(), "wrong-pw") {
			t.Fatalf("message %q", err)
		}
	})
	t.Run("certificate not trusted", func(t *testing.T) {
		opts := diagConfig(l)
		opts.SentinelTLSConfig = l.TLSConfig()
		opts.TLSConfig = &tls.Config{} // the system roots do not include the lab CA
		d, err := Diagnose(ctx, opts)
		var se *StageError
		if !errors.As(err, &se) || se.Stage != StageTLS || se.Server != master {
			t.Fatalf("got %v, want TLS failed on %s\n%s", err, master, d)
		}
	})
	t.Run("dead sentinel is skipped", func(t *testing.T) {
		s0 := l.Sentinels()[0]
		if err := s0.Kill(); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = s0.Restart(ctx) }()
		d, err := Diagnose(ctx, diagConfig(l))
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		if d.Steps[0].Err == nil || !strings.Contains(d.Steps[0].Detail, "down") || d.Sentinel != l.SentinelAddrs()[1] {
			t.Fatalf("first step %+v, answered by %s", d.Steps[0], d.Sentinel)
		}
	})
	t.Run("unknown master name", func(t *testing.T) {
		opts := diagConfig(l)
		opts.MasterName = "nosuch"
		d, err := Diagnose(ctx, opts)
		if err == nil || !strings.Contains(err.Error(), `does not monitor a master named "nosuch"`) {
			t.Fatalf("got %v\n%s", err, d)
		}
	})
	t.Run("direct node", func(t *testing.T) {
		opts := diagConfig(l)
		d, err := DiagnoseNode(ctx, l.Node(1).Addr(), opts)
		if err != nil {
			t.Fatalf("%v\n%s", err, d)
		}
		if last := d.Steps[len(d.Steps)-1]; last.Stage != StageRole || !strings.Contains(last.Detail, "replica of "+master) {
			t.Fatalf("last step %+v", last)
		}
	})
}

// A sentinel is reached stage by stage too: a certificate the client does
// not trust, or credentials the sentinel refuses, are named with the stage
// and the sentinel, not as a vague sentinel error.
func TestDiagnoseNamesTheFailingSentinelStage(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Sentinels: 2, TLS: true, Password: "data-pw", SentinelPassword: "sentinel-pw"})
	tests := []struct {
		name   string
		mod    func(*Config)
		stage  Stage
		prefix string // of the message, after "<stage> failed on <sentinel>: "
	}{
		{"sentinel certificate not trusted", func(o *Config) {
			o.SentinelTLSConfig = &tls.Config{} // the system roots do not include the lab CA
		}, StageTLS, "tls: failed to verify certificate"},
		{"wrong sentinel password", func(o *Config) { o.SentinelPassword = "wrong-pw" }, StageAuth, "WRONGPASS"},
		{"no sentinel password", func(o *Config) { o.SentinelPassword = "" }, StageAuth, "the sentinel requires authentication"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := diagConfig(l)
			tt.mod(&opts)
			d, err := Diagnose(ctx, opts)
			first := l.SentinelAddrs()[0]
			var se *StageError
			if !errors.As(err, &se) || se.Stage != tt.stage || se.Server != first {
				t.Fatalf("got %v, want %s failed on %s\n%s", err, tt.stage, first, d)
			}
			if want := string(tt.stage) + " failed on " + first + ": " + tt.prefix; !strings.HasPrefix(err.Error(), want) {
				t.Fatalf("message %q, want it to start with %q", err, want)
			}
			if strings.Contains(err.Error(), "-pw") || strings.Contains(d.String(), "-pw") {
				t.Fatalf("a password is in the error or the trace:\n%s", d)
			}
			if d.Master != "" || len(d.Steps) != len(l.SentinelAddrs()) {
				t.Fatalf("want one failed step per sentinel and no master; master %q\n%s", d.Master, d)
			}
			for i, st := range d.Steps {
				addr := l.SentinelAddrs()[i]
				if st.Stage != tt.stage || st.Server != addr || !st.Sentinel || st.Err == nil ||
					!strings.HasPrefix(st.Detail, "sentinel "+addr+" skipped") {
					t.Errorf("step %d: %+v; want %s failed on %s", i, st, tt.stage, addr)
				}
			}
			t.Logf("\n%s", d)
		})
	}
}

func toStrings(s []Stage) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = string(v)
	}
	return out
}

// The replica Diagnose names is the one the latency-aware election picks.
func TestDiagnoseNamesTheNearReplica(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 2, Sentinels: 3,
		Nodes: []lab.NodeConfig{{Latency: 6 * time.Millisecond}, {Latency: 42 * time.Millisecond}, {Latency: 6 * time.Millisecond}}})
	d, err := Diagnose(ctx, diagConfig(l))
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	if d.Replica != l.Node(2).Addr() {
		t.Fatalf("Diagnose names %q, want the near replica %s (node2)\n%s", d.Replica, l.Node(2).Addr(), d)
	}
}

// When the election leaves every replica out, the REPLICA step says why,
// replica by replica.
func TestDiagnoseSaysWhyNoReplicaIsElected(t *testing.T) {
	ctx := testkit.Context(t, 30*time.Second)
	l := lab.New(t, lab.Config{Replicas: 1, Sentinels: 1,
		Nodes: []lab.NodeConfig{{Latency: 4 * time.Millisecond}, {Latency: 60 * time.Millisecond}}})
	d, err := Diagnose(ctx, diagConfig(l))
	if err != nil {
		t.Fatalf("%v\n%s", err, d)
	}
	step := d.Steps[len(d.Steps)-1]
	if d.Replica != "" || step.Stage != StageReplica || step.Err != nil ||
		!strings.HasPrefix(step.Detail, "no replica elected among 1 healthy ("+l.Node(1).Addr()+": rtt ") ||
		!strings.Contains(step.Detail, "> 3 × master") || !strings.Contains(step.Detail, "): read-only work uses the master (RTT ") {
		t.Fatalf("replica %q, last step %+v", d.Replica, step)
	}
}
