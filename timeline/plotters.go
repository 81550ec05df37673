package timeline

import (
	"image/color"
	"math"
	"sort"
	"strconv"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Bounds on what a figure draws, whatever its input holds.
const (
	// MaxEvents is how many events a figure numbers and keys; the key
	// says how many more there were.
	MaxEvents = 20
	// MaxNodes is how many nodes get a colour of their own: the ones
	// with the most operations (a Drill) or rounds (a Probe). A Drill
	// stacks the others' operations as "other nodes"; a Probe does not
	// draw their lines, and its caption says how many it left out.
	MaxNodes = 8
	// MaxErrorKinds is how many error kinds get a colour of their own
	// (the most frequent); the rest stack as "error: other".
	MaxErrorKinds = 6
	// MaxBuckets is the most bars a Drill figure draws: a longer run
	// gets wider bars (the next 1-2-5 width), and its caption says so.
	MaxBuckets = 2000
	// MaxWindows is how many windows a Drill figure shades (the first
	// ones given); its caption says how many more there were.
	MaxWindows = 20
	// EmptyLength is the x axis of a figure with nothing on it.
	EmptyLength = time.Second

	maxLabel = 60  // runes of a node, kind or window label
	maxKey   = 160 // runes of an event's key line
)

func secs(d time.Duration) float64 { return d.Seconds() }

// clampDur puts d in [0, limit].
func clampDur(d, limit time.Duration) time.Duration {
	if d < 0 {
		return 0
	}
	if d > limit {
		return limit
	}
	return d
}

func atLabel(sec float64) string {
	return "+" + strconv.FormatFloat(sec, 'f', 3, 64) + "s"
}

// durLabel prints a bar width or a window's length to three significant
// digits at most: "50 ms", "1.5 s", "200 µs", "190 ms" (for 190.065117 ms:
// a window measured between two events is not exact to the nanosecond).
func durLabel(d time.Duration) string {
	f := func(v float64, unit string) string {
		scale := 100.0
		switch {
		case v >= 100:
			scale = 1
		case v >= 10:
			scale = 10
		}
		return strconv.FormatFloat(math.Round(v*scale)/scale, 'f', -1, 64) + " " + unit
	}
	switch {
	case d < time.Microsecond:
		return f(float64(d), "ns")
	case d < time.Millisecond:
		return f(float64(d)/1e3, "µs")
	case d < time.Second:
		return f(float64(d)/1e6, "ms")
	}
	return f(d.Seconds(), "s")
}

// keyEvents sorts events by time (stable, so equal times keep their
// order), clamps them to the axis and keeps MaxEvents.
func keyEvents(evs []Event, length time.Duration) ([]keyEvent, int) {
	type ev struct {
		at time.Duration
		e  Event
	}
	s := make([]ev, len(evs))
	for i, e := range evs {
		s[i] = ev{clampDur(e.At, length), e}
	}
	sort.SliceStable(s, func(a, b int) bool { return s[a].at < s[b].at })
	more := 0
	if len(s) > MaxEvents {
		more = len(s) - MaxEvents
		s = s[:MaxEvents]
	}
	out := make([]keyEvent, len(s))
	for i, e := range s {
		t := clean(e.e.Name, maxKey)
		if d := clean(e.e.Detail, maxKey); d != "" {
			if t != "" {
				t += ": "
			}
			t += d
		}
		if t == "" {
			t = "(unnamed event)"
		}
		out[i] = keyEvent{at: secs(e.at), text: clean(t, maxKey)}
	}
	return out, more
}

// newPlot is a plot with the package's axes: x in seconds from 0 to xmax,
// y from ylo to yhi.
// Shaded spans (seconds) go under the grid and the data.
func newPlot(xmax, ylo, yhi float64, ylabel string, xlabels bool, spans [][2]float64) *plot.Plot {
	p := plot.New()
	p.BackgroundColor = nil
	p.X.Min, p.X.Max = 0, xmax
	p.Y.Min, p.Y.Max = ylo, yhi
	p.X.Padding, p.Y.Padding = 0, 0
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.Label.TextStyle = sans(9.5, false, black)
		a.Tick.Label = sans(8.5, false, black)
		a.LineStyle.Width = 0.6
		a.Tick.LineStyle.Width = 0.6
	}
	p.X.Tick.Label.XAlign, p.X.Tick.Label.YAlign = draw.XCenter, draw.YTop
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Label.Text = ylabel
	p.Y.Label.TextStyle.XAlign, p.Y.Label.TextStyle.YAlign = draw.XCenter, draw.YBottom
	p.Y.Tick.Marker = ticks{n: yTicks, abs: true}
	p.X.Tick.Marker = ticks{n: 10}
	if xlabels {
		p.X.Label.Text = "seconds since start"
		p.X.Label.TextStyle.YAlign = draw.YBottom
	} else {
		p.X.Tick.Marker = ticks{n: 10, noLabel: true}
	}
	if len(spans) > 0 {
		p.Add(shade{spans: spans})
	}
	g := plotter.NewGrid()
	g.Vertical.Color = nil
	g.Horizontal.Color = gridGrey
	g.Horizontal.Width = 0.5
	p.Add(g)
	return p
}

// ticks are major ticks at a 1, 2 or 5 step giving about n of them over
// the range, with minor ticks between; labelled with their magnitude
// (abs: the counts below zero are errors, not negative counts) or not
// at all (an upper plot whose x axis the lower one labels: gonum then
// draws them all short). gonum's
// DefaultTicks aims at three labels, too few to read a 4 s run by.
type ticks struct {
	n       float64
	abs     bool
	noLabel bool
}

func (t ticks) Ticks(lo, hi float64) []plot.Tick {
	span := hi - lo
	if !(span > 0) || math.IsInf(span, 0) {
		return nil
	}
	step, minors := tickStep(span, t.n)
	prec := 0
	if step < 1 {
		prec = int(math.Ceil(-math.Log10(step) - 1e-9))
	}
	minor := step / minors
	first := math.Ceil(lo/minor - 1e-9)
	var out []plot.Tick
	for i := first; ; i++ {
		v := i * minor
		if v > hi+minor*1e-9 || len(out) > 200 {
			break
		}
		if math.Abs(v) < minor*1e-9 {
			v = 0
		}
		tk := plot.Tick{Value: v}
		if r := math.Mod(math.Abs(i), minors); r < 1e-9 || minors-r < 1e-9 {
			if !t.noLabel {
				fmtc := byte('f')
				if math.Abs(v) >= 1e6 {
					fmtc = 'g'
				}
				val := v
				if t.abs {
					val = math.Abs(v)
				}
				tk.Label = strconv.FormatFloat(val, fmtc, prec, 64)
				if fmtc == 'g' {
					tk.Label = strconv.FormatFloat(val, 'g', 4, 64)
				}
			}
		}
		out = append(out, tk)
	}
	return out
}

// tickStep is the 1-2-5 step between about n major ticks over span, and
// how many minor steps divide it.
func tickStep(span, n float64) (step, minors float64) {
	raw := span / n
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []struct{ k, minor float64 }{{1, 5}, {2, 4}, {5, 5}} {
		if m.k*mag >= raw {
			return m.k * mag, m.minor
		}
	}
	return 10 * mag, 5
}

// yRange is a y axis holding hi above zero and lo (a magnitude) below,
// with room, its ends on a labelled tick when the step is whole.
func yRange(hi, lo float64, below bool) (float64, float64) {
	yhi := niceMax(hi, 1.2)
	ylo := 0.0
	if below {
		ylo = -niceMax(lo, 1.05)
	}
	step, _ := tickStep(yhi-ylo, yTicks)
	if step >= 1 {
		yhi = math.Ceil(yhi/step-1e-9) * step
		ylo = math.Floor(ylo/step+1e-9) * step
	}
	return ylo, yhi
}

// yTicks is about how many labelled ticks a y axis has.
const yTicks = 5

// niceMax is a y axis top at least v (and at least 1) with room above.
func niceMax(v, room float64) float64 {
	if !(v > 0) || math.IsInf(v, 0) {
		return 1
	}
	return v * room
}

// stacked draws per-bucket bars stacked in series order, upwards
// (sign 1) or downwards (sign -1) from zero. Neighbouring bars of a
// series with the same bottom and top are one rectangle, and a series'
// rectangles are filled a chunk at a time: freetype's rasterizer (under
// vgimg) slows with the square of the cells in one path.
type stacked struct {
	bucket, length float64 // seconds
	series         [][]float64
	colors         []color.Color
	sign           float64
}

const rectsPerPath = 64

func (s stacked) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	if len(s.series) == 0 {
		return
	}
	nb := len(s.series[0])
	base := make([]float64, nb)
	for i, ser := range s.series {
		var path vg.Path
		n := 0
		flush := func() {
			if n > 0 {
				c.SetColor(s.colors[i])
				c.Fill(path)
			}
			path, n = nil, 0
		}
		for b := 0; b < nb; {
			if ser[b] <= 0 {
				b++
				continue
			}
			y0, y1 := base[b], base[b]+s.sign*ser[b]
			e := b + 1 // the run of bars with the same bottom and top
			for e < nb && ser[e] == ser[b] && base[e] == y0 {
				e++
			}
			for k := b; k < e; k++ {
				base[k] = y1
			}
			x0 := float64(b) * s.bucket
			x1 := math.Min(float64(e)*s.bucket, s.length)
			path.Move(vg.Point{X: tx(x0), Y: ty(y0)})
			path.Line(vg.Point{X: tx(x1), Y: ty(y0)})
			path.Line(vg.Point{X: tx(x1), Y: ty(y1)})
			path.Line(vg.Point{X: tx(x0), Y: ty(y1)})
			path.Close()
			n++
			if n == rectsPerPath {
				flush()
			}
			b = e
		}
		flush()
	}
}

// shade fills windows (seconds) across the plot's height.
type shade struct{ spans [][2]float64 }

func (s shade) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	for _, sp := range s.spans {
		x0, x1 := tx(sp[0]), tx(sp[1])
		if x1-x0 < 1 {
			x1 = x0 + 1
		}
		c.FillPolygon(windowFil, []vg.Point{{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y}})
	}
}

// vlines are the events' dashed vertical lines.
type vlines struct{ at []float64 }

func (v vlines) Plot(c draw.Canvas, p *plot.Plot) {
	tx, _ := p.Transforms(&c)
	sty := draw.LineStyle{Color: darkGrey, Width: 0.8, Dashes: []vg.Length{3, 2}}
	for _, a := range v.at {
		x := tx(a)
		c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
	}
}

// zeroLine is the axis between the bars above zero and the errors below.
type zeroLine struct{}

func (zeroLine) Plot(c draw.Canvas, p *plot.Plot) {
	_, ty := p.Transforms(&c)
	y := ty(0)
	c.StrokeLine2(draw.LineStyle{Color: black, Width: 0.7}, c.Min.X, y, c.Max.X, y)
}

// marks draws, per bucket, a glyph with a count above the bars' top.
type marks struct {
	bucket float64
	top    []float64 // the stack's top per bucket (data units)
	rows   []markRow // drawn in order, each above the last
}

type markRow struct {
	counts []int
	glyph  draw.GlyphStyle
}

func (m marks) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	// Where each row's last count label ends: a label that would overlap
	// it is left out (its mark stays), so that a run of marks in
	// neighbouring bars, as a client losing writes for a second gives,
	// reads as marks with a count now and then, not as a smear of digits.
	labelEnd := make([]vg.Length, len(m.rows))
	for i := range labelEnd {
		labelEnd[i] = -1e9
	}
	for b := range m.top {
		y := ty(m.top[b]) + 2
		for i, r := range m.rows {
			n := r.counts[b]
			if n == 0 {
				continue
			}
			x := tx((float64(b) + 0.5) * m.bucket)
			pt := vg.Point{X: x, Y: y + r.glyph.Radius}
			c.DrawGlyphNoClip(r.glyph, pt)
			sty := markStyle
			sty.Color = r.glyph.Color
			sty.YAlign = draw.YCenter
			label, at := itoa(n), x+r.glyph.Radius+1.5
			if at-r.glyph.Radius > labelEnd[i] {
				c.FillText(sty, vg.Point{X: at, Y: pt.Y}, label)
				labelEnd[i] = at + sty.Width(label)
			}
			y += 2*r.glyph.Radius + 2
		}
	}
}

// downTriangle is a filled triangle pointing down: a lost write, fallen
// out of the data.
type downTriangle struct{}

func (downTriangle) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r*0.8})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r*0.8})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Close()
	c.Fill(p)
}

// diamond is a filled diamond: a duplicated write.
type diamond struct{}

func (diamond) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	r := sty.Radius
	var p vg.Path
	p.Move(vg.Point{X: pt.X, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y})
	p.Line(vg.Point{X: pt.X, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X - r, Y: pt.Y})
	p.Close()
	c.Fill(p)
}

// outlined draws a glyph with a thin dark ring, to stand out on a line
// of its own colour.
type outlined struct{ draw.GlyphDrawer }

func (o outlined) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	o.GlyphDrawer.DrawGlyph(c, sty, pt)
	c.SetColor(black)
	c.SetLineWidth(0.6)
	var p vg.Path
	p.Move(vg.Point{X: pt.X + sty.Radius, Y: pt.Y})
	p.Arc(pt, sty.Radius, 0, 2*math.Pi)
	p.Close()
	c.Stroke(p)
}

// Legend thumbnails.

type rectThumb struct{ c color.Color }

func (r rectThumb) Thumbnail(c *draw.Canvas) {
	h := c.Max.Y - c.Min.Y
	pts := []vg.Point{
		{X: c.Min.X, Y: c.Min.Y + h*0.1}, {X: c.Max.X, Y: c.Min.Y + h*0.1},
		{X: c.Max.X, Y: c.Max.Y - h*0.1}, {X: c.Min.X, Y: c.Max.Y - h*0.1},
	}
	c.FillPolygon(r.c, pts)
}

type glyphThumb struct{ g draw.GlyphStyle }

func (g glyphThumb) Thumbnail(c *draw.Canvas) { c.DrawGlyphNoClip(g.g, c.Center()) }

type lineThumb struct{ l draw.LineStyle }

func (l lineThumb) Thumbnail(c *draw.Canvas) {
	y := c.Center().Y
	c.StrokeLine2(l.l, c.Min.X, y, c.Max.X, y)
}
