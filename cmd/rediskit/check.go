package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/redisurl"
	"github.com/rediskit/rediskit/sentinel"
)

// stageWrite is the write probe's stage in check's trace.
const stageWrite sentinel.Stage = "WRITE"

func newCheckCommand() *cobra.Command {
	var f targetFlags
	var w writeFlags
	cmd := &cobra.Command{
		Use:   "check URL",
		Short: "Trace the connection to a deployment stage by stage",
		Long: `Trace how the rediskit library reaches a deployment, stage by stage, with
each stage's duration:

  redis+sentinel:// and rediss+sentinel://  every sentinel asked and its
      answer, then TCP, TLS, AUTH, HELLO, PING, SELECT and ROLE on the master
      the first answering sentinel named, then the replica read-only work
      would use;
  redis:// and rediss://  TCP, TLS, AUTH, HELLO, PING, SELECT and ROLE on the
      server;
  redis+cluster://h1,h2 and redis://h1?addr=h2  each seed node (NODE: PING
      RTT, server version, CLUSTER SHARDS), whether the seeds agree on the
      shards and their masters (SHARDS, naming the seed that disagrees),
      whether every one of the 16384 slots is served (SLOTS, naming the
      ranges that are not), ROLE on every shard's master and replicas (role,
      offset, link state), then per shard the replica read-only work would
      use (REPLICA: the rediskit cluster client's election after its first
      probe round). Every stage runs; any that fails fails the check.

--write adds the write probe of package guard on the master (or server): a
SET of <prefix>:health:write with a 60s TTL, which tells a writable master
from a read-only replica or a server out of memory. On a cluster it runs
on every shard's master, with a key of the shard's slots
(<prefix>:health:{N}:write, N a hash tag chosen per shard).

A failed stage is named with its server, e.g.
"AUTH failed on 10.0.0.5:6379: WRONGPASS ...", and the exit code is 1.
Passwords come from the URL, or from REDISKIT_PASSWORD and
REDISKIT_SENTINEL_PASSWORD when the URL has none; they are never printed.`,
		Example: `  rediskit check redis+sentinel://10.0.0.1,10.0.0.2,10.0.0.3/mymaster
  REDISKIT_PASSWORD=... rediskit check rediss://cache.internal:6380?caFile=ca.pem --write
  rediskit check redis+cluster://10.0.0.1:7000,10.0.0.2:7000 --write
  rediskit check --lab --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: withTarget(&f, func(ctx context.Context, out io.Writer, t *target) error {
			return runCheck(ctx, out, t, w.write, w.prefix, f.json)
		}),
	}
	f.register(cmd)
	w.register(cmd)
	return cmd
}

// checkJSON is check's --json report.
type checkJSON struct {
	Target       string     `json:"target"`
	Kind         string     `json:"kind"`
	MasterName   string     `json:"master_name,omitempty"`
	Sentinel     string     `json:"sentinel,omitempty"`
	Master       string     `json:"master,omitempty"`
	Replica      string     `json:"replica,omitempty"`
	Steps        []stepJSON `json:"steps"`
	OK           bool       `json:"ok"`
	Error        string     `json:"error,omitempty"`
	FailedStage  string     `json:"failed_stage,omitempty"`
	FailedServer string     `json:"failed_server,omitempty"`
}

type stepJSON struct {
	Stage  string  `json:"stage"`
	Server string  `json:"server"`
	TookMS float64 `json:"took_ms"`
	OK     bool    `json:"ok"`
	Detail string  `json:"detail"`
}

func runCheck(ctx context.Context, out io.Writer, t *target, write bool, prefix string, asJSON bool) error {
	if t.cfg.Kind == redisurl.Unix {
		return usagef("check traces TCP connections: give a redis://, rediss://, redis+sentinel:// or redis+cluster:// URL (health takes unix://)")
	}
	var d *sentinel.Diagnosis
	var steps []sentinel.Step
	var err error
	if t.isCluster() {
		d = &sentinel.Diagnosis{}
		steps = clusterCheckSteps(ctx, t, write, prefix)
		err = firstStepError(steps)
	} else {
		if d, err = diagnose(ctx, t); d == nil {
			return usageError{err} // invalid options
		}
		steps = d.Steps
		if err == nil && write {
			step := writeProbeStep(ctx, t, d.Master, prefix, "")
			steps = append(steps, step)
			err = step.Err
		}
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}

	rep := checkJSON{Target: t.String(), Kind: string(t.cfg.Kind), MasterName: d.MasterName, Sentinel: d.Sentinel,
		Master: d.Master, Replica: d.Replica, Steps: []stepJSON{}, OK: err == nil}
	for _, s := range steps {
		rep.Steps = append(rep.Steps, stepJSON{Stage: string(s.Stage), Server: s.Server, TookMS: ms(s.Took), OK: s.Err == nil, Detail: s.Detail})
	}
	if err != nil {
		rep.Error = err.Error()
		var se *sentinel.StageError
		if errors.As(err, &se) {
			rep.FailedStage, rep.FailedServer = string(se.Stage), se.Server
		}
	}
	if asJSON {
		if werr := writeJSON(out, rep); werr != nil {
			return werr
		}
	} else {
		fmt.Fprintf(out, "check %s\n", rep.Target)
		for _, s := range steps {
			fmt.Fprintln(out, s.String())
		}
		if err == nil {
			fmt.Fprintf(out, "ok: %s\n", checkSummary(t, d, write))
		}
	}
	if err != nil {
		return checkFailed{err}
	}
	return nil
}

// diagnose traces a sentinel or a direct target; a nil Diagnosis means
// invalid options.
func diagnose(ctx context.Context, t *target) (*sentinel.Diagnosis, error) {
	opts, err := t.sentinelConfig()
	if err != nil {
		return nil, err
	}
	if t.isSentinel() {
		return sentinel.Diagnose(ctx, opts)
	}
	return sentinel.DiagnoseNode(ctx, t.cfg.Addr, opts)
}

// firstStepError is the error of the first failed step, nil when none.
func firstStepError(steps []sentinel.Step) error {
	for _, s := range steps {
		if s.Err != nil {
			return s.Err
		}
	}
	return nil
}

func checkSummary(t *target, d *sentinel.Diagnosis, write bool) string {
	s := "reached " + d.Master
	if t.isCluster() {
		s = fmt.Sprintf("%d seed(s) agree, every slot served, every shard's nodes answered ROLE", len(t.cfg.Addrs))
	}
	if d.Sentinel != "" {
		s = fmt.Sprintf("sentinel %s named master %s, verified", d.Sentinel, d.Master)
		if d.Replica != "" {
			s += "; read-only work would use replica " + d.Replica
		} else {
			s += "; read-only work would use the master"
		}
	}
	if write {
		s += "; writable"
	}
	return s
}

// writeProbeStep runs guard's write probe on addr with the target's
// credentials and TLS, as a stage of the trace; key is the probe's key
// under prefix ("": guard's DefaultProbeKey).
func writeProbeStep(ctx context.Context, t *target, addr, prefix, key string) sentinel.Step {
	r, probeKey, err := checkNode(ctx, t, addr, prefix, key, true)
	took := r.Write
	if !r.WriteProbed {
		took = r.Ping
	}
	fail := func(err error) sentinel.Step {
		step := failedStep(stageWrite, addr, err)
		step.Took = took
		return step
	}
	var re *guard.RedisError
	switch {
	case err != nil:
		return fail(err)
	case errors.As(r.Err, &re):
		return fail(fmt.Errorf("%s: %w", re.Kind, re.Err))
	case r.Err != nil:
		return fail(r.Err)
	}
	step := sentinel.Step{Stage: stageWrite, Server: addr, Took: took}
	step.Detail = fmt.Sprintf("SET %s (TTL %v) accepted", probeKey, guard.DefaultProbeTTL)
	return step
}

// checkNode runs one check of guard's Checker on addr with the target's
// credentials and TLS, with the write probe when write (key as in
// writeProbeStep), and returns the report and the probe's full key. The
// error is a bad configuration or ctx's end.
func checkNode(ctx context.Context, t *target, addr, prefix, key string, write bool) (guard.Report, string, error) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return guard.Report{}, "", err
	}
	g, err := guard.Open(guard.ClientConfig{
		Addr: addr, Username: t.cfg.Username, Password: t.cfg.Password, DB: t.cfg.DB, TLSConfig: tlsCfg,
		KeyPrefix:   prefix,
		DialTimeout: orDefault(t.cfg.DialTimeout, t.timeout), ReadTimeout: orDefault(t.cfg.ReadTimeout, t.timeout),
		WriteTimeout: orDefault(t.cfg.WriteTimeout, t.timeout),
		CallLimit:    t.timeout,
	})
	if err != nil {
		return guard.Report{}, "", err
	}
	defer g.Close()
	c, err := guard.NewChecker(g, guard.HealthConfig{WriteProbe: write, ProbeKey: key})
	if err != nil {
		return guard.Report{}, "", err
	}
	r, err := c.Check(ctx)
	return r, c.ProbeKey(), err
}
