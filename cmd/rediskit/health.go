package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/sentinel"
)

func newHealthCommand() *cobra.Command {
	var f targetFlags
	var w writeFlags
	cmd := &cobra.Command{
		Use:   "health URL",
		Short: "The guard health report: writable, reachable, read-only, out of memory, auth, timeout",
		Long: `Run one check of package guard's Checker: PING and, with --write, a write
probe (SET <prefix>:health:write with a 60s TTL). The report is one of

  writable       PING answered and the write probe succeeded   (exit 0)
  reachable      PING answered; no write probe was asked for   (exit 0)
  read-only      the write probe got READONLY: a replica        (exit 1)
  out-of-memory  the write probe got OOM (maxmemory)            (exit 1)
  auth-failed    the server refused the credentials             (exit 1)
  timeout        no answer within --timeout                     (exit 1)
  unreachable    no connection                                  (exit 1)
  pool-full, error-reply                                        (exit 1)

Each call (PING, the probe) is bounded by --timeout, as guard's CallLimit.
A redis+sentinel:// URL is checked through the rediskit Sentinel client:
its master is found first (within the same bound), then checked. A
unix:// URL works too.

A cluster URL (redis+cluster://h1,h2 or redis://h1?addr=h2) is checked
per shard: the seeds' CLUSTER SHARDS name the shards, and each shard's
master gets the check (the write probe with a key of the shard's slots,
<prefix>:health:{N}:write). The verdict is ok (every shard writable or
reachable, exit 0), degraded (some are not) or down (none is, or no seed
answered), exit 1; --json gives {"target", "verdict", "ok", "shards": [the
report above, with "slots"], "error"}.`,
		Example: `  rediskit health redis://10.0.0.5:6379 --write
  rediskit health redis+sentinel://10.0.0.1/mymaster --json
  rediskit health redis+cluster://10.0.0.1:7000,10.0.0.2:7000 --write`,
		Args: cobra.MaximumNArgs(1),
		RunE: withTarget(&f, func(ctx context.Context, out io.Writer, t *target) error {
			return runHealth(ctx, out, t, w.write, w.prefix, f.json)
		}),
	}
	f.register(cmd)
	w.register(cmd)
	return cmd
}

// healthJSON is health's --json report.
type healthJSON struct {
	Target      string  `json:"target"`
	Server      string  `json:"server"`
	State       string  `json:"state"`
	OK          bool    `json:"ok"`
	PingOK      bool    `json:"ping_ok"`
	PingMS      float64 `json:"ping_ms"`
	WriteProbed bool    `json:"write_probed"`
	WriteMS     float64 `json:"write_ms"`
	TookMS      float64 `json:"took_ms"`
	ProbeKey    string  `json:"probe_key,omitempty"`
	Slots       string  `json:"slots,omitempty"` // a cluster shard's slots`
	Error       string  `json:"error,omitempty"`
}

func runHealth(ctx context.Context, out io.Writer, t *target, write bool, prefix string, asJSON bool) error {
	if t.isCluster() {
		return runClusterHealth(ctx, out, t, write, prefix, asJSON)
	}
	g, closeClient, err := openGuard(t, prefix)
	if err != nil {
		return err
	}
	defer closeClient()
	defer g.Close()
	c, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: write})
	if err != nil {
		return usageError{err}
	}
	r, err := c.Check(ctx)
	if err != nil {
		return err // ctx ended (Ctrl-C)
	}
	server := r.Server
	if sc, ok := g.Client().(*sentinel.Client); ok && sc.Master() != "" {
		server = sc.Master()
		r.Server = fmt.Sprintf("master %s of %q", server, t.cfg.MasterName)
	}
	rep := healthOf(t, server, r, write, c.ProbeKey())
	if asJSON {
		if err := writeJSON(out, rep); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(out, "health %s\n", rep.Target)
		fmt.Fprintln(out, r.String())
	}
	if !rep.OK {
		return checkFailed{fmt.Errorf("%s: %w", r.State, r.Err)}
	}
	return nil
}

// healthOf is the JSON report of one check of server.
func healthOf(t *target, server string, r guard.Report, write bool, probeKey string) healthJSON {
	rep := healthJSON{Target: t.String(), Server: server, State: r.State.String(),
		OK:     r.State == guard.StateWritable || r.State == guard.StateReachable,
		PingOK: r.PingOK, PingMS: ms(r.Ping), WriteProbed: r.WriteProbed, WriteMS: ms(r.Write), TookMS: ms(r.Took)}
	if write {
		rep.ProbeKey = probeKey
	}
	if r.Err != nil {
		rep.Error = r.Err.Error()
	}
	return rep
}

// openGuard returns a guard for the target: guard's own fail-fast client
// for a direct URL, a guard around the rediskit Sentinel client for a
// sentinel URL (closeClient closes that client). Every call is bounded by
// --timeout.
func openGuard(t *target, prefix string) (g *guard.Guard, closeClient func(), err error) {
	if !t.isSentinel() {
		o, err := t.cfg.Options()
		if err != nil {
			return nil, nil, usageError{err}
		}
		g, err := guard.Open(guard.ClientConfig{
			Addr: o.Addr, Username: o.Username, Password: o.Password, DB: o.DB, TLSConfig: o.TLSConfig,
			ClientName: o.ClientName, KeyPrefix: prefix,
			DialTimeout:  orDefault(t.cfg.DialTimeout, t.timeout),
			ReadTimeout:  orDefault(t.cfg.ReadTimeout, t.timeout),
			WriteTimeout: orDefault(t.cfg.WriteTimeout, t.timeout),
			CallLimit:    t.timeout,
		})
		if err != nil {
			return nil, nil, usageError{err}
		}
		return g, func() {}, nil
	}
	o, err := t.sentinelConfig()
	if err != nil {
		return nil, nil, usageError{err}
	}
	o.ReadFrom = sentinel.Master
	sc, err := sentinel.NewClient(o)
	if err != nil {
		return nil, nil, usageError{err}
	}
	g, err = guard.New(sc, guard.Config{KeyPrefix: prefix, CallLimit: t.timeout, Server: "sentinel/" + o.MasterName})
	if err != nil {
		_ = sc.Close()
		return nil, nil, usageError{err}
	}
	return g, func() { _ = sc.Close() }, nil
}
