package timeline

import (
	"errors"
	"io"
	"strconv"
	"strings"
	"time"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Render draws the probe as a picture (see the package documentation for
// how to read it).
func (p *Probe) Render(w io.Writer, f Format) error {
	if p == nil {
		return errors.New("timeline: Render of a nil *Probe")
	}
	return renderProbes(w, f, []*Probe{p})
}

func renderProbes(w io.Writer, f Format, ps []*Probe) error {
	if f != SVG && f != PNG {
		return &FormatError{Format: f}
	}
	return writeSheet(w, f, newSheet(probePanels(ps)))
}

// probePanels are the probes' panels on one scale.
func probePanels(ps []*Probe) []*panel {
	sc := newProbeScale(ps)
	panels := make([]*panel, len(ps))
	for i, p := range ps {
		panels[i] = sc.panel(p)
	}
	return panels
}

func probeLength(p *Probe) time.Duration {
	var l time.Duration
	for _, r := range p.Rounds {
		l = max(l, r.At)
	}
	for _, e := range p.Events {
		l = max(l, e.At)
	}
	if l <= 0 {
		l = EmptyLength
	}
	return l
}

// probeScale is what the panels of one picture share.
type probeScale struct {
	length  time.Duration
	nodes   []string // drawn, sorted
	nodeIdx map[string]int
	ymax    float64 // ms
}

func rttMS(d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(d) / 1e6
}

func newProbeScale(ps []*Probe) *probeScale {
	sc := &probeScale{}
	counts := map[string]int{}
	for _, p := range ps {
		sc.length = max(sc.length, probeLength(p))
		for _, r := range p.Rounds {
			for _, n := range r.Nodes {
				counts[n.Addr]++
			}
		}
	}
	sc.nodes = top(counts, MaxNodes)
	sc.nodeIdx = make(map[string]int, len(sc.nodes))
	for i, n := range sc.nodes {
		sc.nodeIdx[n] = i
	}
	for _, p := range ps {
		for _, r := range p.Rounds {
			for _, n := range r.Nodes {
				if _, ok := sc.nodeIdx[n.Addr]; ok {
					sc.ymax = max(sc.ymax, rttMS(n.RTT))
				}
			}
		}
	}
	return sc
}

// probePoint is one node's row of one round, in plot units.
type probePoint struct {
	t, ms            float64
	sampled          bool
	healthy, elected bool
}

// rttLines draws one line per node through its sampled rounds (a round
// without a sample breaks the line), a filled ringed dot where the node
// was elected, a red cross where it was unhealthy.
type rttLines struct {
	nodes [][]probePoint
	lines []draw.LineStyle
	dots  []draw.GlyphStyle
}

func (r rttLines) Plot(c draw.Canvas, p *plot.Plot) {
	tx, ty := p.Transforms(&c)
	for i, pts := range r.nodes {
		var lines [][]vg.Point
		var cur []vg.Point
		for _, pt := range pts {
			if !pt.sampled {
				if len(cur) > 0 {
					lines = append(lines, cur)
				}
				cur = nil
				continue
			}
			cur = append(cur, vg.Point{X: tx(pt.t), Y: ty(pt.ms)})
		}
		if len(cur) > 0 {
			lines = append(lines, cur)
		}
		for _, l := range lines {
			if len(l) == 1 { // a lone sample: a short tick
				l = []vg.Point{{X: l[0].X - 1.5, Y: l[0].Y}, {X: l[0].X + 1.5, Y: l[0].Y}}
			}
			c.StrokeLines(r.lines[i], l)
		}
	}
	for i, pts := range r.nodes {
		for _, pt := range pts {
			at := vg.Point{X: tx(pt.t), Y: ty(pt.ms)}
			if pt.elected {
				c.DrawGlyphNoClip(r.dots[i], at)
			}
			if !pt.healthy {
				c.DrawGlyphNoClip(unhealthyGlyph, at)
			}
		}
	}
}

var unhealthyGlyph = draw.GlyphStyle{Color: lostRed, Radius: 3.2, Shape: boldCross{}}

// boldCross is gonum's CrossGlyph with a line that shows on a 1.6-point
// line under it.
type boldCross struct{}

func (boldCross) DrawGlyph(c *draw.Canvas, sty draw.GlyphStyle, pt vg.Point) {
	c.SetLineWidth(1.2)
	r := sty.Radius * 0.8
	var p vg.Path
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y - r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y + r})
	p.Move(vg.Point{X: pt.X - r, Y: pt.Y + r})
	p.Line(vg.Point{X: pt.X + r, Y: pt.Y - r})
	c.Stroke(p)
}

// roleLabel is a node's roles in the order it had them: "replica",
// "replica, then master".
func roleLabel(roles []string) string {
	if len(roles) == 0 {
		return "no role"
	}
	if len(roles) > 3 {
		roles = append(roles[:2:2], "…")
	}
	return strings.Join(roles, ", then ")
}

func (sc *probeScale) panel(pr *Probe) *panel {
	p := &panel{title: clean(pr.Run.Title, 200)}
	caption := pr.Run.Caption()
	n := len(sc.nodes)
	pts := make([][]probePoint, n)
	roles := make([][]string, n)
	seen := make([]bool, n)
	skipped := map[string]bool{}
	anyElected, anyUnhealthy := false, false
	for _, r := range pr.Rounds {
		t := secs(clampDur(r.At, sc.length))
		for _, nd := range r.Nodes {
			i, ok := sc.nodeIdx[nd.Addr]
			if !ok {
				skipped[nd.Addr] = true
				continue
			}
			seen[i] = true
			ms := rttMS(nd.RTT)
			pts[i] = append(pts[i], probePoint{t: t, ms: ms, sampled: ms > 0, healthy: nd.Healthy, elected: nd.Elected})
			anyElected = anyElected || nd.Elected
			anyUnhealthy = anyUnhealthy || !nd.Healthy
			role := clean(nd.Role, 20)
			if role != "" && (len(roles[i]) == 0 || roles[i][len(roles[i])-1] != role) && len(roles[i]) < 4 {
				roles[i] = append(roles[i], role)
			}
		}
	}
	if len(skipped) > 0 {
		if caption != "" {
			caption += "; "
		}
		caption += strconv.Itoa(len(skipped)) + " more nodes not drawn (at most " + strconv.Itoa(MaxNodes) + ")"
	}
	p.caption = clean(caption, 400)
	p.events, p.moreEvents = keyEvents(pr.Events, sc.length)

	ymax := niceMax(sc.ymax, 1.15)
	pl := newPlot(secs(sc.length), 0, ymax, "RTT (ms, smoothed)", true, nil)
	lines := make([]draw.LineStyle, n)
	dots := make([]draw.GlyphStyle, n)
	for i := range n {
		col := nodePalette[i%len(nodePalette)]
		lines[i] = draw.LineStyle{Color: col, Width: 1.6}
		dots[i] = draw.GlyphStyle{Color: col, Radius: 2.6, Shape: outlined{draw.CircleGlyph{}}}
	}
	pl.Add(rttLines{nodes: pts, lines: lines, dots: dots})
	if len(p.events) > 0 {
		at := make([]float64, len(p.events))
		for i, e := range p.events {
			at[i] = e.at
		}
		pl.Add(vlines{at: at})
	}
	p.plots = []*plot.Plot{pl}
	if len(pr.Rounds) == 0 {
		p.empty = "no probe rounds"
	}
	for i := range n {
		if seen[i] {
			p.legend = append(p.legend, legendEntry{
				name:   nodeName(sc.nodes[i]) + " (" + roleLabel(roles[i]) + ")",
				thumbs: thumbs(lineThumb{lines[i]}),
			})
		}
	}
	if anyElected {
		g := draw.GlyphStyle{Color: midGrey, Radius: 2.6, Shape: outlined{draw.CircleGlyph{}}}
		p.legend = append(p.legend, legendEntry{name: "elected", thumbs: thumbs(glyphThumb{g})})
	}
	if anyUnhealthy {
		p.legend = append(p.legend, legendEntry{name: "unhealthy", thumbs: thumbs(glyphThumb{unhealthyGlyph})})
	}
	return p
}
