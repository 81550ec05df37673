package timeline

import (
	"errors"
	"image/color"
	"io"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg/draw"
)

// Render draws the drill as a picture (see the package documentation for
// how to read it).
func (d *Drill) Render(w io.Writer, f Format) error {
	if d == nil {
		return errors.New("timeline: Render of a nil *Drill")
	}
	return renderDrills(w, f, []*Drill{d})
}

func renderDrills(w io.Writer, f Format, ds []*Drill) error {
	if f != SVG && f != PNG {
		return &FormatError{Format: f}
	}
	return writeSheet(w, f, newSheet(drillPanels(ds)))
}

// drillPanels are the drills' panels on one scale.
func drillPanels(ds []*Drill) []*panel {
	sc := newDrillScale(ds)
	panels := make([]*panel, len(ds))
	bins := make([]*drillBins, len(ds))
	for i, d := range ds {
		bins[i] = sc.bin(d)
		sc.fit(bins[i])
	}
	for i, d := range ds {
		panels[i] = sc.panel(d, bins[i])
	}
	return panels
}

// drillLength is the x axis a drill asks for: Length, or up to its last
// op, event or window; EmptyLength when that is nothing.
func drillLength(d *Drill) time.Duration {
	l := d.Length
	if l <= 0 {
		l = 0
		for _, o := range d.Ops {
			l = max(l, o.At)
		}
		for _, e := range d.Events {
			l = max(l, e.At)
		}
		for _, w := range d.Windows {
			l = max(l, w.From, w.To)
		}
	}
	if l <= 0 {
		l = EmptyLength
	}
	return l
}

// niceUp is the smallest 1, 2 or 5 times a power of ten nanoseconds that
// is at least d.
func niceUp(d time.Duration) time.Duration {
	for p := time.Duration(1); ; p *= 10 {
		for _, m := range []time.Duration{1, 2, 5} {
			if m*p >= d {
				return m * p
			}
		}
		if p > time.Duration(1<<62)/10 {
			return d
		}
	}
}

func ceilDiv(a, b time.Duration) int64 { return int64((a-1)/b) + 1 }

// drillScale is what the panels of one picture share: the axes, the bar
// width and the colours.
type drillScale struct {
	length, bucket, asked time.Duration
	nb                    int
	nodes                 []string // coloured nodes, sorted
	nodeIdx               map[string]int
	kinds                 []string // coloured error kinds, sorted
	kindIdx               map[string]int
	reads                 bool
	writes                bool // some drill has a write, acknowledged or failed
	errs                  bool
	wHi, wLo, rHi, rLo    float64 // the stacks' extremes, all panels
}

// top picks the n keys with the largest counts (ties by key), sorted.
func top(counts map[string]int, n int) []string {
	keys := make([]string, 0, len(counts))
	for k := range counts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if counts[keys[i]] != counts[keys[j]] {
			return counts[keys[i]] > counts[keys[j]]
		}
		return keys[i] < keys[j]
	})
	if len(keys) > n {
		keys = keys[:n]
	}
	sort.Strings(keys)
	return keys
}

func newDrillScale(ds []*Drill) *drillScale {
	sc := &drillScale{}
	nodes := map[string]int{}
	kinds := map[string]int{}
	for _, d := range ds {
		sc.length = max(sc.length, drillLength(d))
		b := d.Bucket
		if b <= 0 {
			b = DefaultBucket
		}
		sc.asked = max(sc.asked, b)
		for _, o := range d.Ops {
			if o.Kind != KindWrite && o.Kind != KindRead {
				continue
			}
			sc.writes = sc.writes || o.Kind == KindWrite
			if o.Err != OutcomeOK {
				kinds[o.Err]++
				continue
			}
			nodes[o.Node]++
			if o.Kind == KindRead {
				sc.reads = true
			}
		}
	}
	sc.bucket = sc.asked
	if ceilDiv(sc.length, sc.bucket) > MaxBuckets {
		sc.bucket = max(sc.asked, niceUp(time.Duration(ceilDiv(sc.length, MaxBuckets))))
	}
	sc.nb = int(ceilDiv(sc.length, sc.bucket))
	sc.nodes = top(nodes, MaxNodes)
	sc.nodeIdx = make(map[string]int, len(sc.nodes))
	for i, n := range sc.nodes {
		sc.nodeIdx[n] = i
	}
	sc.kinds = top(kinds, MaxErrorKinds)
	sc.kindIdx = make(map[string]int, len(sc.kinds))
	for i, k := range sc.kinds {
		sc.kindIdx[k] = i
	}
	sc.errs = len(kinds) > 0
	return sc
}

// drillBins is one drill's counts per bucket. Series index len(nodes)
// is "other nodes", kind index len(kinds) "other errors".
type drillBins struct {
	w, r           [][]float64 // [node][bucket]
	we, re         [][]float64 // [kind][bucket]
	lost, dup      []int
	nLost, nDup    int
	seenW, seenR   []bool
	seenK          []bool
	otherW, otherR int // distinct nodes in "other"
	otherK         int
	ops, skipped   int
}

func grid(rows, cols int) [][]float64 {
	g := make([][]float64, rows)
	for i := range g {
		g[i] = make([]float64, cols)
	}
	return g
}

func (sc *drillScale) bin(d *Drill) *drillBins {
	nn, nk := len(sc.nodes)+1, len(sc.kinds)+1
	b := &drillBins{
		w: grid(nn, sc.nb), r: grid(nn, sc.nb),
		we: grid(nk, sc.nb), re: grid(nk, sc.nb),
		lost: make([]int, sc.nb), dup: make([]int, sc.nb),
		seenW: make([]bool, nn), seenR: make([]bool, nn), seenK: make([]bool, nk),
	}
	others := [3]map[string]bool{{}, {}, {}} // writes' nodes, reads' nodes, error kinds
	for _, o := range d.Ops {
		if o.Kind != KindWrite && o.Kind != KindRead {
			b.skipped++
			continue
		}
		b.ops++
		i := min(int(clampDur(o.At, sc.length)/sc.bucket), sc.nb-1)
		if o.Err != OutcomeOK {
			sc.binError(b, o, i, others[2])
		} else {
			sc.binOK(b, o, i, others)
		}
		if o.Kind == KindWrite && o.Duplicated {
			b.dup[i]++
			b.nDup++
		}
	}
	b.otherW, b.otherR, b.otherK = len(others[0]), len(others[1]), len(others[2])
	return b
}

// binError counts an op that ended in an error, by its kind.
func (sc *drillScale) binError(b *drillBins, o Op, i int, otherKinds map[string]bool) {
	k, ok := sc.kindIdx[o.Err]
	if !ok {
		k = len(sc.kinds)
		otherKinds[o.Err] = true
	}
	b.seenK[k] = true
	if o.Kind == KindWrite {
		b.we[k][i]++
	} else {
		b.re[k][i]++
	}
}

// binOK counts an acknowledged write or answered read, by its node.
func (sc *drillScale) binOK(b *drillBins, o Op, i int, others [3]map[string]bool) {
	n, ok := sc.nodeIdx[o.Node]
	if !ok {
		n = len(sc.nodes)
	}
	if o.Kind == KindRead {
		b.r[n][i]++
		b.seenR[n] = true
		if !ok {
			others[1][o.Node] = true
		}
		return
	}
	b.w[n][i]++
	b.seenW[n] = true
	if !ok {
		others[0][o.Node] = true
	}
	if o.Lost {
		b.lost[i]++
		b.nLost++
	}
}

func sums(g [][]float64, nb int) []float64 {
	s := make([]float64, nb)
	for _, row := range g {
		for i, v := range row {
			s[i] += v
		}
	}
	return s
}

func maxOf(v []float64) float64 {
	m := 0.0
	for _, x := range v {
		m = max(m, x)
	}
	return m
}

// fit widens the shared y ranges to hold b's stacks.
func (sc *drillScale) fit(b *drillBins) {
	sc.wHi = max(sc.wHi, maxOf(sums(b.w, sc.nb)))
	sc.wLo = max(sc.wLo, maxOf(sums(b.we, sc.nb)))
	sc.rHi = max(sc.rHi, maxOf(sums(b.r, sc.nb)))
	sc.rLo = max(sc.rLo, maxOf(sums(b.re, sc.nb)))
}

func (sc *drillScale) nodeColor(i int) color.Color {
	if i >= len(sc.nodes) {
		return otherGrey
	}
	return nodePalette[i%len(nodePalette)]
}

func (sc *drillScale) kindColor(i int) color.Color {
	if i >= len(sc.kinds) {
		return lighter(otherGrey, 0.4)
	}
	return errPalette[i%len(errPalette)]
}

func nodeName(n string) string {
	if n == "" {
		return "unknown node"
	}
	return clean(n, maxLabel)
}

func (sc *drillScale) panel(d *Drill, b *drillBins) *panel {
	p := &panel{title: clean(d.Run.Title, 200), caption: sc.caption(d, b)}
	xmax, bucket, bl := secs(sc.length), secs(sc.bucket), durLabel(sc.bucket)
	p.events, p.moreEvents = keyEvents(d.Events, sc.length)
	var spans [][2]float64
	spans, p.windows = drillWindows(d.Windows, sc.length)
	evAt := make([]float64, len(p.events))
	for i, e := range p.events {
		evAt[i] = e.at
	}
	wc, rc, kc := sc.colors()

	build := func(hi, lo float64, what string, xlabels bool, up, down [][]float64, upC []color.Color) *plot.Plot {
		ylo, yhi := yRange(hi, lo, sc.errs)
		label := what + " per " + bl
		if sc.errs {
			label = what + " / errors per " + bl
		}
		pl := newPlot(xmax, ylo, yhi, label, xlabels, spans)
		pl.Add(stacked{bucket: bucket, length: xmax, series: up, colors: upC, sign: 1})
		if sc.errs {
			pl.Add(stacked{bucket: bucket, length: xmax, series: down, colors: kc, sign: -1})
			pl.Add(zeroLine{})
		}
		if len(evAt) > 0 {
			pl.Add(vlines{at: evAt})
		}
		return pl
	}
	// The writes panel, unless the drills are reads only (a replica-read
	// benchmark): then the reads panel alone.
	p.plots = nil
	if sc.writes || !sc.reads {
		wpl := build(sc.wHi, sc.wLo, "writes", !sc.reads, b.w, b.we, wc)
		if b.nLost > 0 || b.nDup > 0 {
			wpl.Add(marks{bucket: bucket, top: sums(b.w, sc.nb), rows: []markRow{
				{counts: b.lost, glyph: lostGlyph},
				{counts: b.dup, glyph: dupGlyph},
			}})
		}
		p.plots = append(p.plots, wpl)
	}
	if sc.reads {
		p.plots = append(p.plots, build(sc.rHi, sc.rLo, "reads", true, b.r, b.re, rc))
	}
	if b.ops == 0 {
		p.empty = "no operations"
	}
	p.legend = sc.legend(b, wc, rc, kc)
	return p
}

// caption is the run's caption and what the figure had to change.
func (sc *drillScale) caption(d *Drill, b *drillBins) string {
	caption := d.Run.Caption()
	addNote := func(s string) {
		if caption != "" {
			caption += "; "
		}
		caption += s
	}
	if sc.bucket != sc.asked {
		addNote("bars of " + durLabel(sc.bucket) + ", widened from " + durLabel(sc.asked) + " to keep at most " + strconv.Itoa(MaxBuckets) + " bars")
	}
	if b.skipped > 0 {
		addNote(strconv.Itoa(b.skipped) + " operations of no known kind not drawn")
	}
	if n := len(d.Windows) - MaxWindows; n > 0 {
		addNote(strconv.Itoa(n) + " more windows not drawn")
	}
	return clean(caption, 400)
}

// drillWindows are the first MaxWindows windows clamped to the axis (one
// given backwards turned round), as spans to shade and labels for the
// band.
func drillWindows(ws []Window, length time.Duration) ([][2]float64, []bandWindow) {
	var spans [][2]float64
	var labels []bandWindow
	if len(ws) > MaxWindows {
		ws = ws[:MaxWindows]
	}
	for _, w := range ws {
		from, to := clampDur(w.From, length), clampDur(w.To, length)
		if to < from {
			from, to = to, from
		}
		spans = append(spans, [2]float64{secs(from), secs(to)})
		label := clean(w.Label, maxLabel)
		if label == "" {
			label = "window"
		}
		labels = append(labels, bandWindow{from: secs(from), to: secs(to), label: label + " (" + durLabel(to-from) + ")"})
	}
	return spans, labels
}

// colors are the write, read and error colour of each series.
func (sc *drillScale) colors() (wc, rc, kc []color.Color) {
	nn := len(sc.nodes) + 1
	wc, rc = make([]color.Color, nn), make([]color.Color, nn)
	for i := range nn {
		wc[i] = sc.nodeColor(i)
		rc[i] = lighter(wc[i], 0.45)
	}
	kc = make([]color.Color, len(sc.kinds)+1)
	for i := range kc {
		kc[i] = sc.kindColor(i)
	}
	return wc, rc, kc
}

// legend is what this drill holds, in drawing order.
func (sc *drillScale) legend(b *drillBins, wc, rc, kc []color.Color) []legendEntry {
	var l []legendEntry
	for i := range wc {
		if b.seenW[i] {
			l = append(l, legendEntry{name: "writes via " + sc.seriesName(i, b.otherW), thumbs: thumbs(rectThumb{wc[i]})})
		}
	}
	for i := range rc {
		if b.seenR[i] {
			l = append(l, legendEntry{name: "reads via " + sc.seriesName(i, b.otherR), thumbs: thumbs(rectThumb{rc[i]})})
		}
	}
	for i := range kc {
		if b.seenK[i] {
			name := "error: other (" + strconv.Itoa(b.otherK) + " kinds)"
			if i < len(sc.kinds) {
				name = "error: " + clean(sc.kinds[i], maxLabel)
			}
			l = append(l, legendEntry{name: name, thumbs: thumbs(rectThumb{kc[i]})})
		}
	}
	if b.nLost > 0 {
		l = append(l, legendEntry{name: "acknowledged, lost (" + strconv.Itoa(b.nLost) + ")", thumbs: thumbs(glyphThumb{lostGlyph})})
	}
	if b.nDup > 0 {
		l = append(l, legendEntry{name: "duplicated (" + strconv.Itoa(b.nDup) + ")", thumbs: thumbs(glyphThumb{dupGlyph})})
	}
	return l
}

func thumbs(t ...plot.Thumbnailer) []plot.Thumbnailer { return t }

func (sc *drillScale) seriesName(i, others int) string {
	if i < len(sc.nodes) {
		return nodeName(sc.nodes[i])
	}
	return "other nodes (" + strconv.Itoa(others) + ")"
}

var (
	lostGlyph = draw.GlyphStyle{Color: lostRed, Radius: 3.5, Shape: downTriangle{}}
	dupGlyph  = draw.GlyphStyle{Color: dupPurple, Radius: 3.5, Shape: diamond{}}
)
