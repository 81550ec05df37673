package sentinel

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/replica"
)

// Stage names one step of a connection trace.
type Stage string

// The stages of a trace, in order.
const (
	StageSentinel Stage = "SENTINEL" // a sentinel asked for the master
	StageTCP      Stage = "TCP"
	StageTLS      Stage = "TLS"
	StageAuth     Stage = "AUTH"
	StageHello    Stage = "HELLO"
	StagePing     Stage = "PING"
	StageSelect   Stage = "SELECT"
	StageRole     Stage = "ROLE"
	StageReplica  Stage = "REPLICA" // the replica read-only work would use
)

// Step is one stage of a trace: what was tried, on which server, how long
// it took, and what came of it.
type Step struct {
	Stage  Stage
	Server string
	// Sentinel is true when Server is a sentinel (the steps that ask the
	// sentinels for the master), false for a data node.
	Sentinel bool
	Took     time.Duration
	// Detail says what happened in words.
	Detail string
	// Err is set when the stage failed; it is a *StageError.
	Err error
}

func (s Step) String() string {
	status := "ok  "
	if s.Err != nil {
		status = "FAIL"
	}
	return fmt.Sprintf("%s %-8s %-21s %8s  %s", status, s.Stage, s.Server, s.Took.Round(10*time.Microsecond), s.Detail)
}

// StageError says which stage failed on which server, e.g.
// "AUTH failed on 10.0.0.5:6379: WRONGPASS invalid username-password pair".
type StageError struct {
	Stage  Stage
	Server string
	Err    error
}

func (e *StageError) Error() string {
	return fmt.Sprintf("%s failed on %s: %v", e.Stage, e.Server, e.Err)
}

func (e *StageError) Unwrap() error { return e.Err }

// Diagnosis is a staged trace of how the client reaches a deployment.
type Diagnosis struct {
	MasterName string
	// Sentinel is the sentinel whose answer was traced; Master the address
	// it named.
	Sentinel string
	Master   string
	// Replica is the replica read-only work would use ("" for the master).
	Replica string
	Steps   []Step
}

// Err returns the first failed stage's error, or nil. A sentinel that
// failed is skipped, as the client skips it: its error is returned only
// when no sentinel named a master.
func (d *Diagnosis) Err() error {
	for _, s := range d.Steps {
		if s.Err != nil && !s.Sentinel {
			return s.Err
		}
	}
	if d.Master == "" {
		for _, s := range d.Steps {
			if s.Err != nil {
				return s.Err
			}
		}
	}
	return nil
}

func (d *Diagnosis) String() string {
	var b strings.Builder
	for _, s := range d.Steps {
		b.WriteString(s.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// Diagnose traces what a client with cfg would do, for a person to read:
// every sentinel asked and its answer (or why it was skipped), then TCP,
// TLS, AUTH, HELLO, PING, SELECT and ROLE against the master the first
// answering sentinel named, each with its duration, and the replica
// read-only work would use. A wrong password therefore shows as "AUTH
// failed on <the master>", a bad certificate as "TLS failed on <it>".
// Sentinels are reached stage by stage too (TCP, TLS, AUTH, then the
// question): a sentinel that answers is one SENTINEL step, one that fails
// is the step of the stage that failed, on that sentinel ("TLS failed on
// <the sentinel>"). The error is the first failed stage's (a *StageError),
// or nil; a failed sentinel's only when no sentinel named a master.
func Diagnose(ctx context.Context, cfg Config) (*Diagnosis, error) {
	opts, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Diagnosis{MasterName: opts.MasterName}
	for _, s := range opts.SentinelAddrs {
		step, named := askSentinelStep(ctx, &opts, s)
		d.Steps = append(d.Steps, step)
		if named != "" && d.Master == "" {
			d.Master, d.Sentinel = named, s
		}
	}
	if d.Master == "" {
		err := d.Err()
		return d, err
	}
	steps, role := traceNode(ctx, &opts, d.Master)
	d.Steps = append(d.Steps, steps...)
	if role != nil && role.Role != "master" {
		last := &d.Steps[len(d.Steps)-1]
		last.Err = &StageError{Stage: StageRole, Server: d.Master,
			Err: fmt.Errorf("sentinel %s named it as the master, but ROLE says %q (stale sentinel, mid-failover?)", d.Sentinel, role.Role)}
	}
	if d.Err() == nil {
		d.Steps = append(d.Steps, replicaStep(ctx, &opts, d))
	}
	err = d.Err()
	return d, err
}

// DiagnoseNode is Diagnose for a node reached directly (a redis:// URL):
// TCP, TLS, AUTH, HELLO, PING, SELECT and ROLE on addr, with the data-node
// settings of cfg (credentials, TLS, DB, timeouts; the Sentinel fields are
// not used).
func DiagnoseNode(ctx context.Context, addr string, cfg Config) (*Diagnosis, error) {
	cfg.MasterName, cfg.SentinelAddrs = "-", []string{"-:1"}
	opts, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Diagnosis{Master: addr}
	d.Steps, _ = traceNode(ctx, &opts, addr)
	err = d.Err()
	return d, err
}

// askSentinelStep asks one sentinel for the master, stage by stage. It
// returns one step: SENTINEL with the answer, or the stage that failed.
func askSentinelStep(ctx context.Context, opts *Config, addr string) (Step, string) {
	start := time.Now()
	tr := &tracer{server: addr, sentinel: true}
	conn, done := tr.connect(ctx, connSettings{
		tls:     opts.SentinelTLSConfig,
		timeout: opts.SentinelTimeout,
		user:    opts.SentinelUsername,
		pass:    opts.SentinelPassword,
	})
	if conn == nil {
		failed := tr.steps[len(tr.steps)-1]
		failed.Detail = fmt.Sprintf("sentinel %s skipped (%s): %v", addr, sentinelSkipWord(failed.Stage, failed.Err), failed.Err)
		return failed, ""
	}
	defer done()
	cctx, cancel := context.WithTimeout(ctx, opts.SentinelTimeout)
	defer cancel()
	v, err := conn.Do(cctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", opts.MasterName).StringSlice()
	step := Step{Stage: StageSentinel, Server: addr, Sentinel: true, Took: time.Since(start)}
	switch {
	case errors.Is(err, redis.Nil) || (err == nil && len(v) != 2):
		err = fmt.Errorf("does not monitor a master named %q", opts.MasterName)
	case redis.IsAuthError(err):
		// The sentinel wants credentials the options do not give.
		step.Stage = StageAuth
		err = fmt.Errorf("the sentinel requires authentication (SentinelUsername, SentinelPassword): %w", err)
	case err != nil:
		err = describeSentinelError(err, opts.SentinelTimeout)
	}
	if err != nil {
		step.Err = &StageError{Stage: step.Stage, Server: addr, Err: err}
		if step.Stage == StageSentinel {
			step.Detail = fmt.Sprintf("sentinel %s skipped: %v", addr, err)
		} else {
			step.Detail = fmt.Sprintf("sentinel %s skipped (%s): %v", addr, sentinelSkipWord(step.Stage, err), step.Err)
		}
		return step, ""
	}
	named, err := opts.replyAddr(addr, "master", v[0], v[1])
	if err != nil {
		step.Err = &StageError{Stage: step.Stage, Server: addr, Err: err}
		step.Detail = fmt.Sprintf("sentinel %s skipped: %v", addr, err)
		return step, ""
	}
	step.Detail = fmt.Sprintf("sentinel %s named %s as the master of %q", addr, named, opts.MasterName)
	return step, named
}

// sentinelSkipWord says in a word why a sentinel that failed a connection
// stage was skipped.
func sentinelSkipWord(st Stage, err error) string {
	switch st {
	case StageTCP:
		if failure.Timeout(err) {
			return string(SkipSlow)
		}
		return string(SkipDown)
	case StageTLS:
		return "TLS"
	case StageAuth:
		return string(SkipAuth)
	}
	return string(SkipOther)
}

// tracer records the steps of one server's trace.
type tracer struct {
	server   string
	sentinel bool
	steps    []Step
}

// stage records one step; it reports whether the stage succeeded.
func (t *tracer) stage(st Stage, start time.Time, detail string, err error) bool {
	s := Step{Stage: st, Server: t.server, Sentinel: t.sentinel, Took: time.Since(start), Detail: detail}
	if err != nil {
		s.Err = &StageError{Stage: st, Server: t.server, Err: err}
		s.Detail = s.Err.Error()
	}
	t.steps = append(t.steps, s)
	return err == nil
}

// connSettings are what connecting to one server takes.
type connSettings struct {
	tls *tls.Config // nil: no TLS
	// timeout bounds the dial and the TLS handshake; readTimeout and
	// writeTimeout each command (default: timeout).
	timeout, readTimeout, writeTimeout time.Duration
	user, pass                         string
	// credentials, when set, replaces user and pass.
	credentials func(context.Context) (string, string, error)
}

// connect reaches the tracer's server stage by stage: TCP, then TLS when
// configured, then AUTH when there is a password. The connection is made
// by hand and the commands are sent one by one, so a failure is attributed
// to its stage. It returns a go-redis connection pinned to that one
// connection (RESP2, and go-redis itself sends nothing on it), and a
// function that closes it; nil when a stage failed.
func (t *tracer) connect(ctx context.Context, cs connSettings) (*redis.Conn, func()) {
	if cs.readTimeout == 0 {
		cs.readTimeout = cs.timeout
	}
	if cs.writeTimeout == 0 {
		cs.writeTimeout = cs.timeout
	}
	addr := t.server
	start := time.Now()
	dialCtx, cancel := context.WithTimeout(ctx, cs.timeout)
	raw, err := (&net.Dialer{}).DialContext(dialCtx, "tcp", addr)
	cancel()
	if !t.stage(StageTCP, start, "connected", err) {
		return nil, nil
	}
	conn := raw
	if cs.tls != nil {
		start = time.Now()
		hctx, cancel := context.WithTimeout(ctx, cs.timeout)
		tc, err := redisopt.Handshake(hctx, raw, cs.tls, addr)
		cancel()
		detail := ""
		if err == nil {
			st := tc.ConnectionState()
			detail = fmt.Sprintf("%s, server certificate %q", tls.VersionName(st.Version), st.PeerCertificates[0].Subject.CommonName)
		}
		if !t.stage(StageTLS, start, detail, err) {
			return nil, nil // Handshake closed raw
		}
		conn = tc
	}

	// A client over this one connection: RESP2 and no credentials at
	// connect time, so go-redis itself sends nothing before our stages.
	// Its replies are bounded as the client's own connections are
	// (respguard): a hostile sentinel or node fails the stage it answers
	// with a *respguard.LimitError naming it, rather than crash the
	// caller's process.
	var once sync.Once
	client := redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:         addr,
		Protocol:     2,
		PoolSize:     1,
		ReadTimeout:  cs.readTimeout,
		WriteTimeout: cs.writeTimeout,
		Dialer: respguard.WrapDialer(func(context.Context, string, string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c = conn })
			if c == nil {
				return nil, errors.New("the traced connection was closed")
			}
			return c, nil
		}, respguard.Limits{}),
	}))
	pinned := client.Conn()
	done := func() {
		_ = pinned.Close()
		_ = client.Close()
	}

	user, pass := cs.user, cs.pass
	if cs.credentials != nil {
		if user, pass, err = cs.credentials(ctx); err != nil {
			t.stage(StageAuth, time.Now(), "", fmt.Errorf("credentials provider: %w", err))
			done()
			_ = conn.Close()
			return nil, nil
		}
	}
	if pass != "" {
		start = time.Now()
		args := []any{"AUTH"}
		if user != "" {
			args = append(args, user)
		}
		err := pinned.Do(ctx, append(args, pass)...).Err()
		who := "the default user"
		if user != "" {
			who = "user " + strconv.Quote(user)
		}
		if !t.stage(StageAuth, start, "authenticated as "+who, err) {
			done()
			return nil, nil
		}
	}
	return pinned, done
}

// traceNode connects to a data node stage by stage (see tracer.connect),
// then runs HELLO, PING, SELECT and ROLE one by one. It returns the ROLE
// reply when it got one.
func traceNode(ctx context.Context, opts *Config, addr string) ([]Step, *redisinfo.Role) {
	tr := &tracer{server: addr}
	pinned, done := tr.connect(ctx, connSettings{
		tls:          opts.TLSConfig,
		timeout:      opts.DialTimeout,
		readTimeout:  opts.ReadTimeout,
		writeTimeout: opts.WriteTimeout,
		user:         opts.Username,
		pass:         opts.Password,
		credentials:  opts.CredentialsProvider,
	})
	if pinned == nil {
		return tr.steps, nil
	}
	defer done()

	start := time.Now()
	hello, err := pinned.Do(ctx, "HELLO", "3").Result()
	switch {
	case err == nil:
		tr.stage(StageHello, start, helloDetail(hello), nil)
	case failure.UnknownCommand(err):
		tr.stage(StageHello, start, "HELLO not supported (Redis before 6): RESP2", nil)
	default:
		if !tr.stage(StageHello, start, "", err) {
			return tr.steps, nil
		}
	}
	start = time.Now()
	if !tr.stage(StagePing, start, "PONG", pinned.Ping(ctx).Err()) {
		return tr.steps, nil
	}
	if opts.DB != 0 {
		start = time.Now()
		if !tr.stage(StageSelect, start, fmt.Sprintf("database %d", opts.DB), pinned.Do(ctx, "SELECT", opts.DB).Err()) {
			return tr.steps, nil
		}
	}
	start = time.Now()
	role, err := redisinfo.ParseRole(pinned.Do(ctx, "ROLE"))
	if !tr.stage(StageRole, start, roleDetail(role), err) {
		return tr.steps, nil
	}
	return tr.steps, &role
}

func helloDetail(v any) string {
	m, ok := v.(map[any]any)
	if !ok {
		return "RESP3"
	}
	return fmt.Sprintf("RESP3, %v %v, mode %v, role %v", m["server"], m["version"], m["mode"], m["role"])
}

func roleDetail(r redisinfo.Role) string {
	switch r.Role {
	case "master":
		return fmt.Sprintf("master with %d connected replica(s)", len(r.Replicas))
	case "slave":
		return fmt.Sprintf("replica of %s, link %s", r.MasterAddr, r.LinkState)
	}
	return r.Role
}

// replicaStep says which replica read-only work would use: one round of
// the latency-aware election (package replica, the client's default) over
// the replicas the sentinel reports healthy and ROLE confirms.
func replicaStep(ctx context.Context, opts *Config, d *Diagnosis) (step Step) {
	step = Step{Stage: StageReplica, Server: d.Master}
	start := time.Now()
	o := *opts
	t := &topology{opts: &o, log: opts.Logger}
	t.nodes = newNodeSet(t.opts)
	t.sentinels = newSentinelSet(t.opts)
	defer t.nodes.closeAll()
	defer t.sentinels.close()
	scan := t.scanReplicas(ctx, d.Master, nil)
	if scan.dropped > 0 {
		defer func() {
			step.Detail += fmt.Sprintf(" [the sentinels list %d replicas: only %d kept (Config.MaxReplicas); durable writes are refused]", scan.listed, opts.MaxReplicas)
		}()
	}
	healthy := scan.healthy
	switch {
	case !scan.answered():
		var errs []error
		for _, v := range scan.views {
			errs = append(errs, fmt.Errorf("%s: %w", v.sentinel, v.err))
		}
		step.Took = time.Since(start)
		step.Detail = fmt.Sprintf("replicas unknown (%v): read-only work uses the master", errors.Join(errs...))
		return step
	case len(healthy) == 0:
		step.Took = time.Since(start)
		step.Detail = "no healthy replica: read-only work uses the master"
		return step
	}
	addrs := make([]string, len(healthy))
	for i, r := range healthy {
		addrs[i] = r.addr
	}
	table, err := electOnce(ctx, opts, d.Master, addrs)
	step.Took = time.Since(start)
	if err != nil {
		step.Detail = fmt.Sprintf("%d healthy replica(s); no election (%v): read-only work uses the master until the first probe", len(addrs), err)
		return step
	}
	var masterRTT time.Duration
	var elected []replica.NodeStatus
	var why []string // for each replica left out, why
	for _, row := range table {
		switch {
		case row.Role == replica.RoleMaster:
			masterRTT = row.RTT
		case row.Elected:
			elected = append(elected, row)
		default:
			why = append(why, row.Addr+": "+row.Why)
		}
	}
	if len(elected) == 0 {
		step.Detail = fmt.Sprintf("no replica elected among %d healthy (%s): read-only work uses the master (RTT %v)",
			len(addrs), strings.Join(why, " | "), masterRTT.Round(10*time.Microsecond))
		return step
	}
	d.Replica = elected[0].Addr
	step.Server = d.Replica
	step.Detail = fmt.Sprintf("read-only work would use replica %s (RTT %v; master %v; %d healthy, %d elected)",
		d.Replica, elected[0].RTT.Round(10*time.Microsecond), masterRTT.Round(10*time.Microsecond), len(addrs), len(elected))
	return step
}

// electOnce runs one probe round of the default replica election and
// returns its table.
func electOnce(ctx context.Context, opts *Config, master string, replicas []string) ([]replica.NodeStatus, error) {
	cfg := replica.Config{} // the client's default selector
	cfg.ProbeTimeout, cfg.Logger = opts.ProbeTimeout, opts.Logger
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		return nil, err
	}
	defer func() { _ = sel.Close() }()
	sel.Bind(replica.Env{
		MasterName:  opts.MasterName,
		Sentinels:   opts.SentinelAddrs,
		NodeOptions: func(addr string) *redis.Options { return opts.nodeOptions(addr, dialer(opts)) },
		Evict:       func(string) {},
		Logger:      opts.Logger,
	})
	sel.UpdateTopology(replica.Topology{Master: master, Replicas: replicas})
	if err := sel.Start(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, 3*opts.ProbeTimeout)
	defer cancel()
	if err := sel.WaitRound(ctx, 1); err != nil {
		return nil, err
	}
	return sel.Table(), nil
}
