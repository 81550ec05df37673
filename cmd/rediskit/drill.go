package main

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/spf13/cobra"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/internal/failure"
	"github.com/rediskit/rediskit/internal/redisinfo"
	"github.com/rediskit/rediskit/internal/redisopt"
	"github.com/rediskit/rediskit/internal/respguard"
	"github.com/rediskit/rediskit/sentinel"
)

type drillFlags struct {
	targetFlags
	duration     time.Duration
	writers      int
	readers      int
	rate         int
	failover     bool
	failoverWait time.Duration
	yes          bool
	shard        int    // a cluster's shard by index in address order of masters; -1: random
	keepKeys     bool   // leave the drill's keys for inspection
	svg, png     string // files to draw the timeline in ("": none)
}

func newDrillCommand() *cobra.Command {
	var f drillFlags
	cmd := &cobra.Command{
		Use:   "drill URL",
		Short: "A failover drill: bounded load, optional SENTINEL FAILOVER, lost and duplicate writes",
		Long: `Run bounded read and write load against a deployment and report what the
application would have seen: the longest time without an acknowledged
write (and read), the errors by kind, and, checked on the master at the
end, duplicated writes and acknowledged writes that were lost. With
--failover it sends SENTINEL FAILOVER (a redis+sentinel:// URL) or
CLUSTER FAILOVER (a cluster URL) a third of the way in and reports when
the client followed.

Writers RPUSH unique op ids ("<writer>-<n>") to one list; readers GET one
key. Both keys live under a prefix of the drill's own,
rediskit:drill:<random id>:, and are deleted at the end (also after
Ctrl-C, which ends the load early). --rate caps the operations per second
of all workers together; each operation is bounded by --timeout. A
redis+sentinel:// URL is driven through the rediskit Sentinel client
(with the URL's readFrom for reads), a redis:// URL through a plain
go-redis client without retries.

A cluster URL (redis+cluster://h1,h2 or redis://h1?addr=h2) is driven
through the rediskit cluster client. Both keys share a hash tag,
rediskit:drill:{<random id>}:, chosen so that their slot is on one shard:
--shard N (the masters in address order, from 0), or a random one. With
--failover, CLUSTER FAILOVER (graceful: nothing acknowledged may be lost)
goes to a replica of that shard, and the timeline shows the cluster
client's events.

A redis:// URL of a replica is refused (exit code 2): the drill writes,
and it writes nothing there.

The drill refuses to run without --yes against anything that is not a
rediskit lab. --lab starts one. A URL is judged a lab only when every
server it names (the sentinels and the master they name, a cluster's
seeds, or the server) is on a loopback address and says, in INFO
server, that its config file lies in a rediskit lab directory
(rediskit-lab-*, as lab up and the lab package create them). Anything else, including a lab started with a
directory of its own, needs --yes.

--svg FILE (and --png FILE) draws the run's timeline at the end: the
acknowledged writes and answered reads per 50 ms, stacked by the node
that served them, the errors per 50 ms by kind below the axis, the lost
and duplicated writes marked, the client's write holds shaded and its
events as numbered markers, keyed under the plot.

The exit code is 1 when an acknowledged write was lost or a write was
applied twice, when the failover was asked for and the client did not
follow it, or when the result could not be checked.`,
		Example: `  rediskit drill --lab --failover
  rediskit drill redis+sentinel://10.0.0.1,10.0.0.2/mymaster --failover --duration 30s --yes
  rediskit drill --lab --failover --svg drill.svg`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case f.duration <= 0:
				return usagef("--duration must be positive")
			case f.writers < 1 || f.readers < 0:
				return usagef("--writers must be at least 1 and --readers at least 0")
			case f.rate < 0:
				return usagef("--rate cannot be negative")
			case f.failoverWait <= 0:
				return usagef("--failover-wait must be positive")
			}
			if err := figureFlags(f.svg, f.png); err != nil {
				return err
			}
			t, err := openTarget(cmd.Context(), args, &f.targetFlags)
			if err != nil {
				return err
			}
			defer t.Close()
			if f.failover && !t.isSentinel() && !t.isCluster() {
				return usagef("--failover needs a redis+sentinel:// URL (or --lab), or a cluster URL")
			}
			if f.shard >= 0 && !t.isCluster() {
				return usagef("--shard needs a cluster URL")
			}
			return runDrill(cmd.Context(), cmd.OutOrStdout(), t, &f)
		},
	}
	f.targetFlags.register(cmd)
	cmd.Flags().DurationVar(&f.duration, "duration", 10*time.Second, "how long the load runs")
	cmd.Flags().IntVar(&f.writers, "writers", 4, "concurrent writers")
	cmd.Flags().IntVar(&f.readers, "readers", 4, "concurrent readers")
	cmd.Flags().IntVar(&f.rate, "rate", 1000, "operations per second of all workers together (0: no cap)")
	cmd.Flags().BoolVar(&f.failover, "failover", false, "send SENTINEL FAILOVER (a cluster: CLUSTER FAILOVER) a third of the way in")
	cmd.Flags().DurationVar(&f.failoverWait, "failover-wait", 30*time.Second, "how long to wait after the load for the client to follow the failover")
	cmd.Flags().BoolVar(&f.yes, "yes", false, "run against a target that is not a rediskit lab")
	cmd.Flags().IntVar(&f.shard, "shard", -1, "a cluster's shard for the keys and the failover, by index in address order of its masters (default: random)")
	cmd.Flags().BoolVar(&f.keepKeys, "keep-keys", false, "leave the drill's keys in place at the end, to inspect them (delete them by hand)")
	cmd.Flags().StringVar(&f.svg, "svg", "", "draw the timeline (operations per 50 ms by serving node, errors by kind, the client's events) in this SVG file")
	cmd.Flags().StringVar(&f.png, "png", "", "draw the timeline in this PNG file")
	return cmd
}

// drillJSON is drill's --json report. Times "at_s" are seconds since the
// load started.
type drillJSON struct {
	Target       string        `json:"target"`
	Lab          bool          `json:"lab"`
	RunID        string        `json:"run_id"`
	KeyPrefix    string        `json:"key_prefix"`
	DurationS    float64       `json:"duration_s"`
	Interrupted  bool          `json:"interrupted"`
	Writers      int           `json:"writers"`
	Readers      int           `json:"readers"`
	Rate         int           `json:"rate"`
	Shard        *int          `json:"shard,omitempty"`        // a cluster's shard of the keys
	ShardMaster  string        `json:"shard_master,omitempty"` // its master at the start
	Writes       drillOpsJSON  `json:"writes"`
	Reads        drillOpsJSON  `json:"reads"`
	Failover     *failoverJSON `json:"failover"`
	Verification *verifyJSON   `json:"verification"`
	DeletedKeys  int64         `json:"deleted_keys"`
	Figures      []string      `json:"figures,omitempty"` // the --svg and --png files written
	Events       []drillEvent  `json:"events"`
	OK           bool          `json:"ok"`
	Error        string        `json:"error,omitempty"`
}

type drillOpsJSON struct {
	Attempted    int            `json:"attempted"`
	Succeeded    int            `json:"succeeded"`
	Failed       int            `json:"failed"`
	Errors       map[string]int `json:"errors"`
	ByNode       map[string]int `json:"by_node"` // succeeded, by the node that served them
	LongestGapMS float64        `json:"longest_gap_ms"`
	GapAtS       float64        `json:"gap_at_s"`
	P50MS        float64        `json:"p50_ms"`
	P99MS        float64        `json:"p99_ms"`
}

type failoverJSON struct {
	RequestedAtS   float64 `json:"requested_at_s"`
	Sentinel       string  `json:"sentinel"`
	Replica        string  `json:"replica,omitempty"` // the replica sent CLUSTER FAILOVER
	OldMaster      string  `json:"old_master"`
	NewMaster      string  `json:"new_master"`
	SwitchedAfterS float64 `json:"switched_after_s"`
	Error          string  `json:"error,omitempty"`
}

type verifyJSON struct {
	Present        int `json:"present"`
	Acknowledged   int `json:"acknowledged"`
	Duplicates     int `json:"duplicates"`
	Lost           int `json:"lost"`
	FailedButFound int `json:"failed_but_applied"`
}

type drillEvent struct {
	AtS    float64 `json:"at_s"`
	Event  string  `json:"event"`
	Detail string  `json:"detail"`
}

// opRecord is one operation's outcome.
type opRecord struct {
	id   string
	end  time.Time
	took time.Duration
	err  error
	node string // the node whose client ran it last ("": none did)
}

func newRunID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// drill is one run of the drill command: the target and its client, the
// keys of this run, and the report its stages fill in. runDrill calls the
// stages in order on one goroutine; the client's observer and the load's
// workers run alongside it, so what they write is behind evMu and opsMu.
type drill struct {
	out    io.Writer
	t      *target
	f      *drillFlags
	client redis.UniversalClient
	cc     *cluster.Client // the client, for a cluster target
	shard  *drillShard     // a cluster's shard of the keys

	runID, prefix, opsKey, readKey string
	rep                            drillJSON

	// evMu guards what the client's observer writes or reads: rep.Events,
	// began (events before the load are dropped) and the client's first
	// switch to a new master.
	evMu       sync.Mutex
	began      time.Time
	switchedAt time.Time
	switchedTo string

	// The load: stop ends the workers, each paced interval apart (0: no
	// --rate cap); opsMu guards their records.
	stop          chan struct{}
	interval      time.Duration
	opsMu         sync.Mutex
	writes, reads []opRecord

	fo        *failoverJSON // the failover requested, nil without one
	oldMaster string        // the client's master when it was requested (behind evMu)

	present map[string]int // the op list's ids on the master, counted (nil: unread)

	wroteNothing bool   // the setup's SET did not run: no key to delete
	cleanup      func() // deletes the keys, once (deleteKeys)
}

// runDrill runs the drill's stages in order: refuse a target that is not
// a lab before anything writes to it; open the client and say what will
// run; write the readers' key (a setup that fails ends the drill before
// any load); run the load, with the failover a third of the way in; then,
// no longer cut short by Ctrl-C, wait for the client to follow the
// failover, print the timeline and the load's figures, check the op list
// on the master, and finish: delete the keys and print the JSON report.
// The keys are deleted on every way out (the deferred cleanup).
func runDrill(ctx context.Context, out io.Writer, t *target, f *drillFlags) error {
	isLab, err := drillTargetIsLab(ctx, t, f.yes)
	if err != nil {
		return err
	}
	d := newDrill(out, t, f, isLab)
	if err := d.openClient(); err != nil {
		return usageError{err}
	}
	defer d.client.Close()
	if d.cc != nil {
		if err := d.placeKeys(ctx); err != nil {
			return err
		}
	}
	d.printHeader()
	d.cleanup = sync.OnceFunc(func() { d.deleteKeys(ctx) })
	defer d.cleanup()
	if err := d.setup(ctx); err != nil {
		return d.setupFailed(err)
	}
	d.runLoad(ctx)
	// From here on, Ctrl-C no longer cuts the checks short: each is bounded.
	ctx = context.WithoutCancel(ctx)
	failures := d.awaitFailover()
	d.printTimeline()
	d.printOps()
	failures = append(failures, d.verify(ctx)...)
	failures = append(failures, d.drawFigures()...)
	return d.finish(failures)
}

// drillTargetIsLab says whether the target is a rediskit lab, and refuses
// one that is not without --yes: the drill writes to it.
func drillTargetIsLab(ctx context.Context, t *target, yes bool) (bool, error) {
	if t.lab != nil {
		return true, nil
	}
	ok, why := judgeLab(ctx, t)
	if !ok && !yes {
		return false, usagef("%s is not a rediskit lab (%s): pass --yes to run the drill against it", t, why)
	}
	return ok, nil
}

// newDrill names this run's keys, under a prefix of its own, and starts
// the report.
func newDrill(out io.Writer, t *target, f *drillFlags, isLab bool) *drill {
	runID := newRunID()
	d := &drill{
		out: out, t: t, f: f,
		rep: drillJSON{Target: t.String(), Lab: isLab, Writers: f.writers, Readers: f.readers, Rate: f.rate, Events: []drillEvent{}},
	}
	d.nameKeys(runID, "rediskit:drill:"+runID)
	return d
}

// nameKeys sets the run's id and its keys, under prefix.
func (d *drill) nameKeys(runID, prefix string) {
	d.runID, d.prefix, d.opsKey, d.readKey = runID, prefix, prefix+":ops", prefix+":read"
	d.rep.RunID, d.rep.KeyPrefix = runID, prefix+":"
}

// openClient opens the target's client, observed for the timeline and the
// failover check.
func (d *drill) openClient() error {
	if d.t.isCluster() {
		cc, err := d.t.clusterClient(cluster.Config{Observer: d.observeCluster})
		if err != nil {
			return err
		}
		d.client, d.cc = cc, cc
		tagServingNodes(cc)
		return nil
	}
	client, err := d.t.client(func(o *sentinel.Config) { o.Observer = d.observe })
	if err != nil {
		return err
	}
	d.client = client
	tagServingNodes(client)
	return nil
}

// observe records the Sentinel client's events that tell a failover's
// story, and its first switch away from a known master: the one the
// failover check waits for.
func (d *drill) observe(ev sentinel.Event) {
	switch ev.Kind {
	case sentinel.EventMasterChanged, sentinel.EventFailoverStarted, sentinel.EventFailoverHoldEnded,
		sentinel.EventWriteRefused, sentinel.EventWriteRerun:
		d.event(ev.Time, ev.Kind.String(), eventDetail(ev.String(), ev.Time))
	}
	if ev.Kind == sentinel.EventMasterChanged && ev.OldMaster != "" {
		d.evMu.Lock()
		if d.switchedAt.IsZero() {
			d.switchedAt, d.switchedTo = ev.Time, ev.Master
		}
		d.evMu.Unlock()
	}
}

// eventDetail is an event's String without its leading time of day.
func eventDetail(s string, at time.Time) string {
	return strings.TrimPrefix(s, at.Format("15:04:05.000")+" ")
}

// event adds an event to the report's timeline, once the load has begun.
func (d *drill) event(at time.Time, name, detail string) {
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if d.began.IsZero() {
		return
	}
	d.rep.Events = append(d.rep.Events, drillEvent{AtS: at.Sub(d.began).Seconds(), Event: name, Detail: detail})
}

// text prints a line of the text report; with --json nothing is printed
// but the JSON report.
func (d *drill) text(format string, args ...any) {
	if !d.f.json {
		fmt.Fprintf(d.out, format, args...)
	}
}

// printHeader says what the drill will do, to what, and where its keys are.
func (d *drill) printHeader() {
	kind := "not a lab, run with --yes"
	if d.rep.Lab {
		kind = "a rediskit lab"
	}
	rateText := "no rate cap"
	if d.f.rate > 0 {
		rateText = fmt.Sprintf("at most %d ops/s", d.f.rate)
	}
	d.text("drill on %s (%s): %v, %d writers, %d readers, %s; keys %s:*\n",
		d.t, kind, d.f.duration, d.f.writers, d.f.readers, rateText, d.prefix)
	if sh := d.shard; sh != nil {
		d.text("keys on shard %d (master %s, replicas %s), slot %d\n", sh.index, sh.master, strings.Join(sh.replicas, ", "), cluster.Slot(d.opsKey))
	}
}

// deleteKeys deletes the drill's keys, whatever happened (it runs before
// the JSON report, and on every way out), unless nothing was written: the
// setup's SET was refused before it ran (a replica's READONLY, no
// connection), and no worker started.
func (d *drill) deleteKeys(ctx context.Context) {
	if d.wroteNothing {
		return
	}
	if d.f.keepKeys {
		d.text("kept the drill's keys (--keep-keys): DEL %s %s\n", d.opsKey, d.readKey)
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d.t.timeout)
	defer cancel()
	n, err := d.client.Del(masterContext(cctx), d.opsKey, d.readKey).Result()
	if err != nil {
		d.text("could not delete the drill's keys %s:* (%v): delete them by hand\n", d.prefix, err)
		return
	}
	d.rep.DeletedKeys = n
	d.text("deleted %d keys (%s:*)\n", n, d.prefix)
}

// finish deletes the keys first (the report counts them), prints the JSON
// report, and turns the failures into the drill's error (exit code 1).
func (d *drill) finish(failures []string) error {
	d.cleanup()
	d.rep.OK = len(failures) == 0
	if !d.rep.OK {
		d.rep.Error = strings.Join(failures, "; ")
	}
	if d.f.json {
		// The client is still open: its observer may still append to
		// rep.Events.
		d.evMu.Lock()
		err := writeJSON(d.out, d.rep)
		d.evMu.Unlock()
		if err != nil {
			return err
		}
	}
	if !d.rep.OK {
		return checkFailed{errors.New("drill failed: " + d.rep.Error)}
	}
	return nil
}

// setup writes the key the readers GET: the drill's first write, which
// tells whether the target takes writes at all.
func (d *drill) setup(ctx context.Context) error {
	sctx, cancel := context.WithTimeout(ctx, d.t.timeout)
	defer cancel()
	return d.client.Set(sctx, d.readKey, d.runID, 0).Err()
}

// setupFailed ends a drill whose setup SET failed, before any load.
func (d *drill) setupFailed(err error) error {
	d.wroteNothing = failure.NotExecuted(err)
	if redis.IsReadOnlyError(err) && !d.t.isSentinel() {
		// A replica's URL: the drill writes, and there is no master
		// behind the URL to follow. Nothing to check or delete.
		return usagef("%s is a replica (read-only: %v); the drill wrote nothing. "+
			"Give it the master's URL, or a redis+sentinel:// URL to follow the master", d.t, err)
	}
	if d.wroteNothing {
		d.text("the setup's SET was not run (%v): the drill wrote no keys\n", err)
	}
	return d.finish([]string{fmt.Sprintf("setup: SET %s: %v", d.readKey, err)})
}

// runLoad runs the writers and readers until --duration has passed or
// Ctrl-C, and returns once every worker has stopped. The load's start
// (began) is set before the first worker starts: the timeline and the
// gaps count from it.
func (d *drill) runLoad(ctx context.Context) {
	d.stop = make(chan struct{})
	if d.f.rate > 0 {
		workers := d.f.writers + d.f.readers
		d.interval = time.Duration(float64(time.Second) * float64(workers) / float64(d.f.rate))
	}
	var wg sync.WaitGroup
	d.evMu.Lock()
	d.began = time.Now()
	d.evMu.Unlock()
	for w := range d.f.writers {
		wg.Go(func() { d.writer(ctx, w) })
	}
	for range d.f.readers {
		wg.Go(func() { d.reader(ctx) })
	}
	interrupted := d.awaitLoadEnd(ctx)
	close(d.stop)
	wg.Wait()
	d.rep.DurationS = time.Since(d.began).Seconds()
	d.rep.Interrupted = interrupted
	if interrupted {
		d.text("interrupted after %.1fs: the load stopped; checking and cleaning up\n", d.rep.DurationS)
	}
}

// writer RPUSHes op ids of its own ("<w>-<n>") to the op list until the
// load stops, recording each outcome for the check.
func (d *drill) writer(ctx context.Context, w int) {
	next := time.Now()
	for i := 0; d.pace(&next); i++ {
		id := fmt.Sprintf("%d-%d", w, i)
		octx, cancel := context.WithTimeout(ctx, d.t.timeout)
		octx, served := withServedBy(octx)
		start := time.Now()
		err := d.client.RPush(octx, d.opsKey, id).Err()
		cancel()
		d.record(&d.writes, id, start, err, served)
	}
}

// reader GETs the setup's key until the load stops, recording each outcome.
func (d *drill) reader(ctx context.Context) {
	next := time.Now()
	for d.pace(&next) {
		octx, cancel := context.WithTimeout(ctx, d.t.timeout)
		octx, served := withServedBy(octx)
		start := time.Now()
		err := d.client.Get(octx, d.readKey).Err()
		cancel()
		if errors.Is(err, redis.Nil) {
			err = nil // a replica that has not the key yet answered
		}
		d.record(&d.reads, "", start, err, served)
	}
}

// record adds an operation that started at start and ends now to ops,
// with the node its client ran it on last (served).
func (d *drill) record(ops *[]opRecord, id string, start time.Time, err error, served *servedBy) {
	rec := opRecord{id: id, end: time.Now(), took: time.Since(start), err: err, node: served.node()}
	d.opsMu.Lock()
	defer d.opsMu.Unlock()
	*ops = append(*ops, rec)
}

// pace waits for a worker's next turn under the --rate cap (next is the
// worker's schedule) and says whether the load is still running.
func (d *drill) pace(next *time.Time) bool {
	if d.interval > 0 {
		*next = next.Add(d.interval)
		if wait := time.Until(*next); wait > 0 {
			timer := time.NewTimer(wait)
			defer timer.Stop()
			select {
			case <-d.stop:
				return false
			case <-timer.C:
			}
		} else if wait < -d.interval {
			*next = time.Now() // behind: no burst to catch up
		}
	}
	select {
	case <-d.stop:
		return false
	default:
		return true
	}
}

// awaitLoadEnd waits for the end of --duration or Ctrl-C (interrupted),
// requesting the failover when a third of the duration has passed.
func (d *drill) awaitLoadEnd(ctx context.Context) (interrupted bool) {
	third := time.NewTimer(d.f.duration / 3)
	end := time.NewTimer(d.f.duration)
	defer third.Stop()
	defer end.Stop()
	for {
		select {
		case <-ctx.Done():
			return true
		case <-end.C:
			return false
		case <-third.C:
			if d.f.failover {
				d.requestFailover(ctx)
			}
		}
	}
}

// requestFailover sends SENTINEL FAILOVER to the sentinels, or for a
// cluster CLUSTER FAILOVER to a replica of the drill's shard (the first
// that accepts), noting the client's master before it: the check waits
// for the client to leave that one.
func (d *drill) requestFailover(ctx context.Context) {
	c := d.t.cfg
	old, addrs, user, pass := "", c.Sentinels, c.SentinelUsername, c.SentinelPassword
	args := []any{"SENTINEL", "FAILOVER", c.MasterName}
	if d.cc != nil {
		old, addrs, user, pass, args = d.shard.master, d.shard.replicas, c.Username, c.Password, []any{"CLUSTER", "FAILOVER"}
	} else {
		old = d.client.(*sentinel.Client).Master()
	}
	d.evMu.Lock()
	d.oldMaster = old
	d.evMu.Unlock()
	d.fo = &failoverJSON{RequestedAtS: time.Since(d.began).Seconds(), OldMaster: old}
	name := args[0].(string) + " FAILOVER"
	addr, err := sendFirst(ctx, d.t, addrs, user, pass, args...)
	detail := fmt.Sprintf("SENTINEL FAILOVER %s sent to %s (the client's master: %s)", c.MasterName, addr, old)
	if d.cc != nil {
		d.fo.Replica = addr
		detail = fmt.Sprintf("CLUSTER FAILOVER sent to %s, a replica of shard %d (master %s)", addr, d.shard.index, old)
	} else {
		d.fo.Sentinel = addr
	}
	if err != nil {
		d.fo.Error = name + ": " + err.Error()
		d.event(time.Now(), "failover request failed", d.fo.Error)
		return
	}
	d.event(time.Now(), "failover requested", detail)
}

// awaitFailover puts the failover, if one was requested, in the report:
// once the request was sent, it waits for the client to follow it. It
// returns the failover's failure, if any.
func (d *drill) awaitFailover() []string {
	fo := d.fo
	d.rep.Failover = fo
	if fo == nil {
		return nil
	}
	if fo.Error == "" {
		d.followFailover(fo)
	}
	if fo.Error != "" {
		return []string{"failover: " + fo.Error}
	}
	return nil
}

// followFailover waits, up to --failover-wait after the load, for the
// client to leave the old master, and notes when it switched (its first
// master change, from the observer) or that it did not.
func (d *drill) followFailover(fo *failoverJSON) {
	deadline := time.Now().Add(d.f.failoverWait)
	for d.master() == fo.OldMaster && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	d.evMu.Lock()
	at, to := d.switchedAt, d.switchedTo
	d.evMu.Unlock()
	if at.IsZero() {
		fo.Error = fmt.Sprintf("the client did not follow the failover within %v of the load's end (master still %s)", d.f.failoverWait, d.master())
		return
	}
	fo.NewMaster = to
	fo.SwitchedAfterS = at.Sub(d.began).Seconds() - fo.RequestedAtS
}

// master is the client's master of the drill's keys: the Sentinel
// client's, or for a cluster the first master the old one's slots moved
// to (observeCluster), the old one until then.
func (d *drill) master() string {
	if d.cc == nil {
		return d.client.(*sentinel.Client).Master()
	}
	d.evMu.Lock()
	defer d.evMu.Unlock()
	if d.switchedTo != "" {
		return d.switchedTo
	}
	return d.oldMaster
}

// printTimeline sorts the client's events by time (the observer records
// them from the client's goroutines) and prints them, then the failover's
// outcome.
func (d *drill) printTimeline() {
	d.evMu.Lock()
	slices.SortStableFunc(d.rep.Events, func(a, b drillEvent) int { return cmp.Compare(a.AtS, b.AtS) })
	events := slices.Clone(d.rep.Events)
	d.evMu.Unlock()
	if len(events) > 0 {
		kind := "Sentinel"
		if d.cc != nil {
			kind = "cluster"
		}
		d.text("timeline (seconds since the load started; the %s client's events):\n", kind)
		for _, ev := range events {
			d.text("  %+7.3fs  %s\n", ev.AtS, ev.Detail)
		}
	}
	switch fo := d.fo; {
	case fo == nil:
	case fo.Error != "":
		d.text("failover: %s\n", fo.Error)
	default:
		d.text("failover: the client followed to %s %v after the request\n",
			fo.NewMaster, time.Duration(fo.SwitchedAfterS*float64(time.Second)).Round(time.Millisecond))
	}
}

// printOps sums up the writes and the reads in the report and prints them
// (the reads only when there were readers).
func (d *drill) printOps() {
	d.rep.Writes = summarizeOps(d.writes, d.began)
	d.rep.Reads = summarizeOps(d.reads, d.began)
	w, r := d.rep.Writes, d.rep.Reads
	d.text("writes: %d acknowledged, %d failed%s; longest gap without an acknowledged write %v (at %+.2fs); p50 %.2fms, p99 %.2fms\n",
		w.Succeeded, w.Failed, errorsText(w.Errors), msDuration(w.LongestGapMS), w.GapAtS, w.P50MS, w.P99MS)
	if d.f.readers > 0 {
		d.text("reads:  %d answered, %d failed%s; longest gap without an answered read %v (at %+.2fs); p50 %.2fms, p99 %.2fms\n",
			r.Succeeded, r.Failed, errorsText(r.Errors), msDuration(r.LongestGapMS), r.GapAtS, r.P50MS, r.P99MS)
	}
}

// verify reads the op list on the master and compares it with the writes'
// outcomes; it returns the failures: the list unread, acknowledged writes
// lost, writes applied twice.
func (d *drill) verify(ctx context.Context) []string {
	v, count, err := verifyDrill(ctx, d.client, d.t.timeout, d.opsKey, d.writes)
	d.present = count
	if err != nil {
		d.text("check: could not read %s: %v\n", d.opsKey, err)
		return []string{"check: " + err.Error()}
	}
	d.rep.Verification = v
	d.text("check on the master: %d of %d acknowledged writes present; %d duplicated; %d lost; %d failed writes applied anyway\n",
		v.Acknowledged-v.Lost, v.Acknowledged, v.Duplicates, v.Lost, v.FailedButFound)
	var failures []string
	if v.Lost > 0 {
		failures = append(failures, fmt.Sprintf("%d acknowledged writes lost", v.Lost))
	}
	if v.Duplicates > 0 {
		failures = append(failures, fmt.Sprintf("%d writes applied twice", v.Duplicates))
	}
	return failures
}

func msDuration(v float64) time.Duration {
	return time.Duration(v * float64(time.Millisecond)).Round(time.Millisecond)
}

func errorsText(m map[string]int) string {
	if len(m) == 0 {
		return ""
	}
	kinds := make([]string, 0, len(m))
	for k := range m {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	parts := make([]string, len(kinds))
	for i, k := range kinds {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

// summarizeOps counts outcomes, classifies errors, and finds the longest
// time without a success, from the load's start to its last operation.
func summarizeOps(ops []opRecord, began time.Time) drillOpsJSON {
	s := drillOpsJSON{Attempted: len(ops), Errors: map[string]int{}, ByNode: map[string]int{}}
	var ok []time.Time
	var lat []time.Duration
	last := began
	for _, op := range ops {
		if op.end.After(last) {
			last = op.end
		}
		if op.err != nil {
			s.Failed++
			s.Errors[errKind(op.err)]++
			continue
		}
		s.Succeeded++
		s.ByNode[op.node]++
		ok = append(ok, op.end)
		lat = append(lat, op.took)
	}
	slices.SortFunc(ok, func(a, b time.Time) int { return a.Compare(b) })
	prev := began
	for _, at := range append(ok, last) {
		if gap := at.Sub(prev); ms(gap) > s.LongestGapMS {
			s.LongestGapMS, s.GapAtS = ms(gap), prev.Sub(began).Seconds()
		}
		prev = at
	}
	if len(lat) > 0 {
		slices.Sort(lat)
		s.P50MS = ms(lat[len(lat)/2])
		s.P99MS = ms(lat[(len(lat)*99)/100])
	}
	return s
}

// errKind names an error's kind for the drill's tally.
func errKind(err error) string {
	var mce *sentinel.MasterChangedError
	var nde *sentinel.NotDurableError
	var de *sentinel.DiscoveryError
	var cmce *cluster.MasterChangedError
	var cnde *cluster.NotDurableError
	var cnme *cluster.NoMasterError
	var ne net.Error
	switch {
	case errors.As(err, &mce), errors.As(err, &cmce):
		return "master changed"
	case errors.As(err, &nde), errors.As(err, &cnde):
		return "not durable"
	case errors.Is(err, sentinel.ErrFailoverInProgress):
		return "failover in progress"
	case errors.Is(err, sentinel.ErrNoReplica), errors.Is(err, cluster.ErrNoReplica):
		return "no replica"
	case errors.As(err, &de), errors.As(err, &cnme):
		return "no master"
	case redis.IsReadOnlyError(err):
		return "READONLY"
	case failure.Timeout(err):
		return "timeout"
	case errors.As(err, &ne), failure.Network(err), errors.Is(err, redis.ErrClosed):
		return "connection"
	}
	var re redis.Error
	if errors.As(err, &re) {
		word, _, _ := strings.Cut(re.Error(), " ")
		return word
	}
	return "other"
}

// verifyDrill reads the op list on the master and compares it with the
// writes' outcomes; count is how many times each id is in the list.
func verifyDrill(ctx context.Context, c redis.UniversalClient, timeout time.Duration, key string, writes []opRecord) (v *verifyJSON, count map[string]int, err error) {
	var present []string
	for attempt := 0; attempt < 5; attempt++ {
		if attempt > 0 {
			time.Sleep(200 * time.Millisecond)
		}
		present, err = readList(ctx, c, timeout, key)
		if err == nil {
			break
		}
	}
	if err != nil {
		return nil, nil, err
	}
	count = make(map[string]int, len(present))
	for _, id := range present {
		count[id]++
	}
	v = &verifyJSON{Present: len(present)}
	for _, w := range writes {
		n := count[w.id]
		if n > 1 {
			v.Duplicates++
		}
		if w.err == nil {
			v.Acknowledged++
			if n == 0 {
				v.Lost++
			}
		} else if n > 0 {
			v.FailedButFound++
		}
	}
	return v, count, nil
}

// readList reads a list in pages of 10,000, each bounded by timeout.
func readList(ctx context.Context, c redis.UniversalClient, timeout time.Duration, key string) ([]string, error) {
	const page = 10000
	ctx = masterContext(ctx)
	var all []string
	for start := int64(0); ; start += page {
		rctx, cancel := context.WithTimeout(ctx, timeout)
		part, err := c.LRange(rctx, key, start, start+page-1).Result()
		cancel()
		if err != nil {
			return nil, err
		}
		all = append(all, part...)
		if len(part) < page {
			return all, nil
		}
	}
}

// masterContext makes reads on ctx go to the master, for the Sentinel
// client and the cluster client alike.
func masterContext(ctx context.Context) context.Context {
	return cluster.WithReadFrom(sentinel.WithReadFrom(ctx, sentinel.Master), cluster.Master)
}

// sendFirst sends a command (SENTINEL FAILOVER, CLUSTER FAILOVER) to the
// servers at addrs, in order, until one accepts; it returns that server's
// address.
func sendFirst(ctx context.Context, t *target, addrs []string, user, pass string, args ...any) (string, error) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return "", err
	}
	if len(addrs) == 0 {
		return "", errors.New("no server to send it to")
	}
	var errs []error
	for _, addr := range addrs {
		c := redis.NewClient(respguard.Guard(redisopt.Inner(&redis.Options{
			Addr: addr, Username: user, Password: pass, TLSConfig: tlsCfg,
			DialTimeout: t.timeout, ReadTimeout: t.timeout, WriteTimeout: t.timeout,
		})))
		sctx, cancel := context.WithTimeout(ctx, t.timeout)
		err := c.Do(sctx, args...).Err()
		cancel()
		_ = c.Close()
		if err == nil {
			return addr, nil
		}
		errs = append(errs, fmt.Errorf("%s: %w", addr, err))
	}
	return "", errors.Join(errs...)
}

// judgeLab decides whether a URL target is a rediskit lab: every server
// it names is on loopback and reports (INFO server) a config file inside
// a rediskit-lab-* directory. For a sentinel URL, the sentinels and the
// master the first of them names are checked. why says what disqualified
// it.
func judgeLab(ctx context.Context, t *target) (ok bool, why string) {
	tlsCfg, err := t.cfg.TLSConfig()
	if err != nil {
		return false, err.Error()
	}
	type server struct {
		addr, user, pass string
	}
	var servers []server
	switch {
	case t.isSentinel():
		for _, s := range t.cfg.Sentinels {
			servers = append(servers, server{s, t.cfg.SentinelUsername, t.cfg.SentinelPassword})
		}
	case t.isCluster():
		for _, s := range t.cfg.Addrs {
			servers = append(servers, server{s, t.cfg.Username, t.cfg.Password})
		}
	default:
		servers = append(servers, server{t.cfg.Addr, t.cfg.Username, t.cfg.Password})
	}
	marker := func(s server, sentinelToo bool) (string, error) {
		if !isLoopback(s.addr) {
			return "", fmt.Errorf("%s is not a loopback address", s.addr)
		}
		c := redis.NewClient(respguard.Guard(redisopt.Inner(&redis.Options{
			Addr: s.addr, Username: s.user, Password: s.pass, TLSConfig: tlsCfg,
			DialTimeout: t.timeout, ReadTimeout: t.timeout, WriteTimeout: t.timeout,
		})))
		defer c.Close()
		ictx, cancel := context.WithTimeout(ctx, t.timeout)
		defer cancel()
		info, err := c.Info(ictx, "server").Result()
		if err != nil {
			return "", fmt.Errorf("INFO server on %s: %w", s.addr, err)
		}
		conf := redisinfo.ParseInfo(info)["config_file"]
		if !strings.HasPrefix(filepath.Base(filepath.Dir(filepath.Dir(conf))), "rediskit-lab-") {
			return "", fmt.Errorf("%s runs with config file %q, outside a rediskit-lab-* directory", s.addr, conf)
		}
		if !sentinelToo {
			return "", nil
		}
		v, err := c.Do(ictx, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", t.cfg.MasterName).StringSlice()
		if err != nil || len(v) != 2 {
			return "", fmt.Errorf("sentinel %s names no master %q (%v)", s.addr, t.cfg.MasterName, err)
		}
		return net.JoinHostPort(v[0], v[1]), nil
	}
	var master string
	for i, s := range servers {
		m, err := marker(s, t.isSentinel() && i == 0)
		if err != nil {
			return false, err.Error()
		}
		if i == 0 {
			master = m
		}
	}
	if master != "" {
		if _, err := marker(server{master, t.cfg.Username, t.cfg.Password}, false); err != nil {
			return false, err.Error()
		}
	}
	return true, ""
}

func isLoopback(addr string) bool {
	host := hostOf(addr)
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
