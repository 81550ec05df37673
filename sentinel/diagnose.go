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

	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
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
	Took   time.Duration
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

// Err returns the first failed stage's error, or nil.
func (d *Diagnosis) Err() error {
	for _, s := range d.Steps {
		if s.Err != nil && s.Stage != StageSentinel {
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

// Diagnose traces what a client with opts would do, for a person to read:
// every sentinel asked and its answer (or why it was skipped), then TCP,
// TLS, AUTH, HELLO, PING, SELECT and ROLE against the master the first
// answering sentinel named, each with its duration, and the replica
// read-only work would use. A wrong password therefore shows as "AUTH
// failed on <the master>", a bad certificate as "TLS failed on <it>". The
// error is the first failed stage's (a *StageError), or nil.
func Diagnose(ctx context.Context, opts Options) (*Diagnosis, error) {
	opts, err := opts.withDefaults()
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
		return d, d.Err()
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
	return d, d.Err()
}

// DiagnoseNode is Diagnose for a node reached directly (a redis:// URL):
// TCP, TLS, AUTH, HELLO, PING, SELECT and ROLE on addr, with the data-node
// settings of opts (credentials, TLS, DB, timeouts; the Sentinel fields are
// not used).
func DiagnoseNode(ctx context.Context, addr string, opts Options) (*Diagnosis, error) {
	opts.MasterName, opts.SentinelAddrs = "-", []string{"-:1"}
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	d := &Diagnosis{Master: addr}
	d.Steps, _ = traceNode(ctx, &opts, addr)
	return d, d.Err()
}

func askSentinelStep(ctx context.Context, opts *Options, addr string) (Step, string) {
	step := Step{Stage: StageSentinel, Server: addr}
	client := redis.NewClient(opts.sentinelOptions(addr))
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, opts.SentinelTimeout)
	defer cancel()
	start := time.Now()
	v, err := client.Do(ctx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", opts.MasterName).StringSlice()
	step.Took = time.Since(start)
	switch {
	case errors.Is(err, redis.Nil) || (err == nil && len(v) != 2):
		err = fmt.Errorf("does not monitor a master named %q", opts.MasterName)
	case err != nil:
		err = describeSentinelError(err, opts.SentinelTimeout)
	}
	if err != nil {
		step.Err = &StageError{Stage: StageSentinel, Server: addr, Err: err}
		step.Detail = fmt.Sprintf("sentinel %s skipped: %v", addr, err)
		return step, ""
	}
	named := net.JoinHostPort(v[0], v[1])
	step.Detail = fmt.Sprintf("sentinel %s named %s as the master of %q", addr, named, opts.MasterName)
	return step, named
}

// traceNode connects to addr stage by stage. The connection is made by
// hand (TCP, then TLS) and the commands are sent one by one, so a failure
// is attributed to its stage. It returns the ROLE reply when it got one.
func traceNode(ctx context.Context, opts *Options, addr string) ([]Step, *redisinfo.Role) {
	var steps []Step
	stage := func(st Stage, start time.Time, detail string, err error) bool {
		s := Step{Stage: st, Server: addr, Took: time.Since(start), Detail: detail}
		if err != nil {
			s.Err = &StageError{Stage: st, Server: addr, Err: err}
			s.Detail = s.Err.Error()
		}
		steps = append(steps, s)
		return err == nil
	}

	start := time.Now()
	dialCtx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
	raw, err := (&net.Dialer{}).DialContext(dialCtx, "tcp", addr)
	cancel()
	if !stage(StageTCP, start, "connected", err) {
		return steps, nil
	}
	conn := raw
	if opts.TLSConfig != nil {
		start = time.Now()
		hctx, cancel := context.WithTimeout(ctx, opts.DialTimeout)
		tc, err := redisopt.Handshake(hctx, raw, opts.TLSConfig, addr)
		cancel()
		detail := ""
		if err == nil {
			st := tc.ConnectionState()
			detail = fmt.Sprintf("%s, server certificate %q", tls.VersionName(st.Version), st.PeerCertificates[0].Subject.CommonName)
		}
		if !stage(StageTLS, start, detail, err) {
			return steps, nil
		}
		conn = tc
	}

	// A client over this one connection: RESP2 and no credentials at
	// connect time, so go-redis itself sends nothing before our stages.
	var once sync.Once
	client := redis.NewClient(redisopt.Inner(&redis.Options{
		Addr:         addr,
		Protocol:     2,
		PoolSize:     1,
		ReadTimeout:  opts.ReadTimeout,
		WriteTimeout: opts.WriteTimeout,
		Dialer: func(context.Context, string, string) (net.Conn, error) {
			var c net.Conn
			once.Do(func() { c = conn })
			if c == nil {
				return nil, errors.New("the traced connection was closed")
			}
			return c, nil
		},
	}))
	defer client.Close()
	pinned := client.Conn()
	defer pinned.Close()

	user, pass := opts.Username, opts.Password
	if opts.CredentialsProvider != nil {
		if user, pass, err = opts.CredentialsProvider(ctx); err != nil {
			stage(StageAuth, time.Now(), "", fmt.Errorf("credentials provider: %w", err))
			return steps, nil
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
		if !stage(StageAuth, start, "authenticated as "+who, err) {
			return steps, nil
		}
	}

	start = time.Now()
	hello, err := pinned.Do(ctx, "HELLO", "3").Result()
	switch {
	case err == nil:
		stage(StageHello, start, helloDetail(hello), nil)
	case strings.Contains(err.Error(), "unknown command"):
		stage(StageHello, start, "HELLO not supported (Redis before 6): RESP2", nil)
	default:
		if !stage(StageHello, start, "", err) {
			return steps, nil
		}
	}
	start = time.Now()
	if !stage(StagePing, start, "PONG", pinned.Ping(ctx).Err()) {
		return steps, nil
	}
	if opts.DB != 0 {
		start = time.Now()
		if !stage(StageSelect, start, fmt.Sprintf("database %d", opts.DB), pinned.Do(ctx, "SELECT", opts.DB).Err()) {
			return steps, nil
		}
	}
	start = time.Now()
	role, err := redisinfo.ParseRole(pinned.Do(ctx, "ROLE"))
	if !stage(StageRole, start, roleDetail(role), err) {
		return steps, nil
	}
	return steps, &role
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
func replicaStep(ctx context.Context, opts *Options, d *Diagnosis) Step {
	step := Step{Stage: StageReplica, Server: d.Master}
	start := time.Now()
	c := &Client{opts: *opts, log: opts.Logger}
	c.nodes = newNodeSet(&c.opts)
	c.sentinels = newSentinelSet(&c.opts)
	defer c.nodes.closeAll()
	defer c.sentinels.close()
	healthy, _, err := c.healthyReplicas(ctx, d.Sentinel)
	switch {
	case err != nil:
		step.Took = time.Since(start)
		step.Detail = fmt.Sprintf("replicas unknown (%v): read-only work uses the master", err)
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
	for _, row := range table {
		if row.Role == replica.RoleMaster {
			masterRTT = row.RTT
		} else if row.Elected {
			elected = append(elected, row)
		}
	}
	if len(elected) == 0 {
		step.Detail = fmt.Sprintf("no replica elected among %d healthy: read-only work uses the master (RTT %v)", len(addrs), masterRTT.Round(10*time.Microsecond))
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
func electOnce(ctx context.Context, opts *Options, master string, replicas []string) ([]replica.NodeStatus, error) {
	cfg := replica.DefaultConfig() // the client's default selector
	cfg.ProbeTimeout, cfg.Logger = opts.ProbeTimeout, opts.Logger
	sel, err := replica.NewSelector(cfg)
	if err != nil {
		return nil, err
	}
	defer sel.Close()
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
