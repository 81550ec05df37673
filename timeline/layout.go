package timeline

import (
	"image/color"
	"math"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The geometry of a panel (one Drill or Probe; SideBySide puts panels in a
// row). Every size is fixed or computed from the input's counts, never
// from a value in it, so a picture's size is bounded.
const (
	// PanelWidth is the width of one figure; SideBySide of n figures is n
	// times as wide.
	PanelWidth = 10 * vg.Inch

	margin      = 0.2 * vg.Inch
	plotHeight  = 3.2 * vg.Inch // the plots of a panel with one plot
	plotHeight2 = 4.8 * vg.Inch // with two (a Drill with reads)
	plotGap     = 0.12 * vg.Inch
	legendGap   = 0.2 * vg.Inch
	maxLegendW  = 3.2 * vg.Inch
	bandRowH    = vg.Length(12)
	keyRowH     = vg.Length(12.5)
	keyGap      = vg.Length(10)
	maxBandRows = 3 // per kind (event numbers, window labels); beyond, labels share the last row

	// fontSlack widens the room kept for a text beyond its width in
	// Liberation Sans: an SVG viewer without the font (it is not
	// embedded) draws a wider one, such as DejaVu Sans.
	fontSlack    = 1.15
	keyCols2From = 7 // events from which the key takes two columns
)

var (
	black     = color.Gray{Y: 0}
	darkGrey  = color.Gray{Y: 0x40}
	midGrey   = color.Gray{Y: 0x70}
	gridGrey  = color.Gray{Y: 0xe4}
	lostRed   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff}
	dupPurple = color.RGBA{R: 0x7b, G: 0x1f, B: 0xa2, A: 0xff}
	windowFil = color.RGBA{R: 0xfd, G: 0xed, B: 0xb8, A: 0xff}
	windowInk = color.RGBA{R: 0x9a, G: 0x6a, B: 0x00, A: 0xff}
	otherGrey = color.Gray{Y: 0xb4}
)

// nodePalette colours nodes in sorted address order (Tableau 10 without
// its red and grey, which mark lost writes and "other"): the same address
// gets the same colour in every panel of a SideBySide.
var nodePalette = []color.Color{
	rgb(0x1f, 0x77, 0xb4), rgb(0xff, 0x7f, 0x0e), rgb(0x2c, 0xa0, 0x2c), rgb(0x94, 0x67, 0xbd),
	rgb(0x17, 0xbe, 0xcf), rgb(0x8c, 0x56, 0x4b), rgb(0xe3, 0x77, 0xc2), rgb(0xbc, 0xbd, 0x22),
}

// errPalette colours error kinds in sorted order: darker, muted tones so
// that the bars below zero do not read as a node's.
var errPalette = []color.Color{
	rgb(0x63, 0x63, 0x63), rgb(0xbd, 0x9e, 0x39), rgb(0xad, 0x49, 0x4a), rgb(0xa5, 0x51, 0x94),
	rgb(0x6b, 0x6e, 0xcf), rgb(0x8c, 0xa2, 0x52),
}

func rgb(r, g, b uint8) color.Color { return color.RGBA{R: r, G: g, B: b, A: 0xff} }

// lighter mixes c with white: a node's read bars.
func lighter(c color.Color, f float64) color.Color {
	r, g, b, _ := c.RGBA()
	mix := func(v uint32) uint8 { return uint8(float64(v>>8) + (255-float64(v>>8))*f) }
	return color.RGBA{R: mix(r), G: mix(g), B: mix(b), A: 0xff}
}

func sans(size vg.Length, bold bool, c color.Color) text.Style {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return text.Style{Color: c, Font: f, Handler: plot.DefaultTextHandler}
}

// clean makes s safe to draw and to put in XML: invalid UTF-8, control
// characters (a newline would start a second line) and the non-characters
// XML forbids become spaces, runs of space collapse, and s is cut to max
// runes with an ellipsis.
func clean(s string, limit int) string {
	var b strings.Builder
	n := 0
	space := false
	for i := 0; i < len(s) && n < limit+1; {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		if r == utf8.RuneError || unicode.IsControl(r) || unicode.IsSpace(r) || r == 0xFFFE || r == 0xFFFF || !unicode.IsPrint(r) {
			r = ' '
		}
		if r == ' ' {
			if space || n == 0 {
				continue
			}
			space = true
		} else {
			space = false
		}
		b.WriteRune(r)
		n++
	}
	out := strings.TrimRight(b.String(), " ")
	if utf8.RuneCountInString(out) > limit {
		rs := []rune(out)
		out = strings.TrimRight(string(rs[:limit-1]), " ") + "…"
	}
	return out
}

// fit shortens s with an ellipsis until it is at most w wide in sty.
func fit(sty text.Style, s string, w vg.Length) string {
	if s == "" || sty.Width(s) <= w {
		return s
	}
	rs := []rune(s)
	lo, hi := 0, len(rs) // the longest prefix that fits is in [lo, hi)
	for lo < hi {
		mid := (lo + hi + 1) / 2
		if sty.Width(strings.TrimRight(string(rs[:mid]), " ")+"…") <= w {
			lo = mid
		} else {
			hi = mid - 1
		}
	}
	if lo == 0 {
		return "…"
	}
	return strings.TrimRight(string(rs[:lo]), " ") + "…"
}

// legendEntry is one line of a panel's legend.
type legendEntry struct {
	name   string
	thumbs []plot.Thumbnailer
}

// keyEvent is one numbered event of a panel.
type keyEvent struct {
	at   float64 // seconds, clamped to the x axis
	text string  // "name: detail", cleaned
}

// bandWindow is a shaded window's label above the plot.
type bandWindow struct {
	from, to float64 // seconds
	label    string
}

// panel is one figure ready to draw: its plots (top first, sharing the x
// axis), legend, events and windows.
type panel struct {
	title, caption string
	plots          []*plot.Plot
	legend         []legendEntry
	events         []keyEvent
	moreEvents     int // events beyond MaxEvents, not drawn
	windows        []bandWindow
	empty          string // a note drawn over an empty plot

	// filled by layout
	evRow, winRow []int
	evRows        int
	winRows       int
}

// sheet is a row of panels with the same geometry.
type sheet struct {
	w, h            vg.Length
	panels          []*panel
	headerH, bandH  vg.Length
	plotsH, keyH    vg.Length
	legendW         vg.Length
	keyRows, keyCol int
}

var (
	titleStyle   = sans(13, true, black)
	captionStyle = sans(9, false, midGrey)
	legendStyle  = sans(9, false, black)
	keyStyle     = sans(9, false, black)
	keyNumStyle  = sans(9, true, black)
	bandNumStyle = sans(8.5, true, darkGrey)
	bandWinStyle = sans(8.5, false, windowInk)
	noteStyle    = sans(12, false, midGrey)
	markStyle    = sans(7.5, true, black)
)

func newLegend() plot.Legend {
	l := plot.NewLegend()
	l.TextStyle = legendStyle
	l.Top, l.Left = true, true
	l.ThumbnailWidth = 18
	l.Padding = 3.5
	return l
}

// plotsRect is the part of a panel at x0 that the plots take.
func (s *sheet) plotsRect(x0, yTop vg.Length) vg.Rectangle {
	return vg.Rectangle{
		Min: vg.Point{X: x0 + margin, Y: yTop - s.plotsH},
		Max: vg.Point{X: x0 + PanelWidth - margin - s.legendW - legendGap, Y: yTop},
	}
}

// dataX maps seconds to the x of the plots' data area in rect.
func dataX(p *panel, rect vg.Rectangle) (func(float64) vg.Length, vg.Length, vg.Length) {
	tiles := align(p, draw.Canvas{Rectangle: rect})
	dc := p.plots[0].DataCanvas(tiles[0])
	ax := p.plots[0].X
	return func(sec float64) vg.Length {
		return dc.Min.X + vg.Length((sec-ax.Min)/(ax.Max-ax.Min))*(dc.Max.X-dc.Min.X)
	}, dc.Min.X, dc.Max.X
}

func align(p *panel, c draw.Canvas) []draw.Canvas {
	rows := make([][]*plot.Plot, len(p.plots))
	for i, pl := range p.plots {
		rows[i] = []*plot.Plot{pl}
	}
	cs := plot.Align(rows, draw.Tiles{Rows: len(p.plots), Cols: 1, PadY: plotGap}, c)
	out := make([]draw.Canvas, len(cs))
	for i := range cs {
		out[i] = cs[i][0]
	}
	return out
}

// rows assigns each label (an x span) the first row where it clears the
// labels already there; past max rows it goes to the row that ends
// soonest. It returns each label's row and the rows used.
func rows(spans [][2]vg.Length, maxRows int) ([]int, int) {
	const gap = 3
	var ends []vg.Length
	out := make([]int, len(spans))
	idx := make([]int, len(spans))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return spans[idx[a]][0] < spans[idx[b]][0] })
	for _, i := range idx {
		sp := spans[i]
		row := -1
		for r, e := range ends {
			if sp[0] >= e+gap {
				row = r
				break
			}
		}
		if row < 0 && len(ends) < maxRows {
			ends = append(ends, 0)
			row = len(ends) - 1
		}
		if row < 0 {
			row = 0
			for r, e := range ends {
				if e < ends[row] {
					row = r
				}
			}
		}
		ends[row] = max32(ends[row], sp[1])
		out[i] = row
	}
	return out, len(ends)
}

func max32(a, b vg.Length) vg.Length {
	if a > b {
		return a
	}
	return b
}

func numLabel(i int) string { return itoa(i + 1) }

func itoa(i int) string {
	if i == 0 {
		return "0"
	}
	var b [20]byte
	n := len(b)
	neg := i < 0
	if neg {
		i = -i
	}
	for i > 0 {
		n--
		b[n] = byte('0' + i%10)
		i /= 10
	}
	if neg {
		n--
		b[n] = '-'
	}
	return string(b[n:])
}

// windowSpan is the x span a window's label takes: from the window's
// start, at least as wide as the window.
func windowSpan(x func(float64) vg.Length, w bandWindow) [2]vg.Length {
	x0 := x(w.from)
	x1 := max32(x(w.to), x0+bandWinStyle.Width(w.label)*fontSlack)
	return [2]vg.Length{x0, x1}
}

func eventSpan(x func(float64) vg.Length, i int, e keyEvent) [2]vg.Length {
	w := bandNumStyle.Width(numLabel(i))
	return [2]vg.Length{x(e.at) - w/2, x(e.at) + w/2}
}

// newSheet lays panels out in a row: the same legend width, band, plot
// and key heights for all, so that their axes line up.
func newSheet(panels []*panel) *sheet {
	s := &sheet{panels: panels}
	for _, p := range panels {
		for _, e := range p.legend {
			w := newLegend().ThumbnailWidth + (legendStyle.Width(" ")+legendStyle.Width(e.name))*fontSlack + 4
			s.legendW = max32(s.legendW, w)
		}
	}
	s.legendW = min(max32(s.legendW, 1.2*vg.Inch), maxLegendW)
	for _, p := range panels {
		for i := range p.legend {
			p.legend[i].name = fit(legendStyle, p.legend[i].name, (s.legendW-newLegend().ThumbnailWidth-4)/fontSlack-legendStyle.Width(" ")+0.01)
		}
	}

	s.plotsH = plotHeight
	if len(panels[0].plots) > 1 {
		s.plotsH = plotHeight2
	}
	for _, p := range panels {
		l := newLegend()
		for _, e := range p.legend {
			l.Add(e.name, e.thumbs...)
		}
		s.plotsH = max32(s.plotsH, l.Rectangle(draw.Canvas{}).Size().Y)
	}

	// Band rows, from where the labels fall on the x axis (which does
	// not depend on the plots' height or place).
	for _, p := range panels {
		x, _, _ := dataX(p, s.plotsRect(0, s.plotsH))
		ev := make([][2]vg.Length, len(p.events))
		for i, e := range p.events {
			ev[i] = eventSpan(x, i, e)
		}
		p.evRow, p.evRows = rows(ev, maxBandRows)
		wn := make([][2]vg.Length, len(p.windows))
		for i, w := range p.windows {
			wn[i] = windowSpan(x, w)
		}
		p.winRow, p.winRows = rows(wn, maxBandRows)
		s.bandH = max32(s.bandH, vg.Length(p.evRows+p.winRows)*bandRowH+4)

		h := vg.Length(0)
		if p.title != "" {
			h += titleStyle.Rectangle(p.title).Size().Y + 3
		}
		if p.caption != "" {
			h += captionStyle.Rectangle(p.caption).Size().Y + 2
		}
		s.headerH = max32(s.headerH, h)

		n := len(p.events)
		cols := 1
		if n >= keyCols2From {
			cols = 2
		}
		r := (n + cols - 1) / cols
		if p.moreEvents > 0 {
			r++
		}
		if r > s.keyRows {
			s.keyRows = r
		}
		if cols > s.keyCol {
			s.keyCol = cols
		}
	}
	if s.keyRows > 0 {
		s.keyH = keyGap + vg.Length(s.keyRows)*keyRowH
	}
	s.w = PanelWidth * vg.Length(len(panels))
	s.h = margin + s.headerH + s.bandH + s.plotsH + s.keyH + margin
	s.h = vg.Length(math.Ceil(float64(s.h))) // whole points: whole pixels at PNGDPI/72 = 2
	return s
}

func (s *sheet) draw(c draw.Canvas) {
	c.SetColor(color.White)
	c.Fill(c.Rectangle.Path())
	for i, p := range s.panels {
		s.drawPanel(c, p, PanelWidth*vg.Length(i))
	}
}

func (s *sheet) drawPanel(c draw.Canvas, p *panel, x0 vg.Length) {
	y := c.Max.Y - margin
	inner := PanelWidth - 2*margin
	if p.title != "" {
		t := fit(titleStyle, p.title, inner)
		sty := titleStyle
		sty.YAlign = draw.YTop
		c.FillText(sty, vg.Point{X: x0 + margin, Y: y}, t)
		y -= titleStyle.Rectangle(t).Size().Y + 3
	}
	if p.caption != "" {
		t := fit(captionStyle, p.caption, inner)
		sty := captionStyle
		sty.YAlign = draw.YTop
		c.FillText(sty, vg.Point{X: x0 + margin, Y: y}, t)
	}
	yBand := c.Max.Y - margin - s.headerH
	yPlots := yBand - s.bandH
	rect := s.plotsRect(x0, yPlots)
	x, dMin, dMax := dataX(p, rect)

	// Window labels above the event numbers, each with a bracket over its
	// span; the numbers just above the plot.
	for i, w := range p.windows {
		row := p.evRows + p.winRow[i]
		base := yPlots + 2 + vg.Length(row)*bandRowH
		x0w, x1w := x(w.from), max32(x(w.to), x(w.from)+1)
		c.StrokeLines(draw.LineStyle{Color: windowInk, Width: 0.8}, []vg.Point{{X: x0w, Y: base + 3}, {X: x0w, Y: base}, {X: x1w, Y: base}, {X: x1w, Y: base + 3}})
		sty := bandWinStyle
		lx := x0w
		if lw := sty.Width(w.label) * fontSlack; lx+lw > dMax {
			lx = max32(dMax-lw, dMin)
		}
		c.FillText(sty, vg.Point{X: lx, Y: base + 3}, w.label)
	}
	for i, e := range p.events {
		base := yPlots + 2 + vg.Length(p.evRow[i])*bandRowH
		sty := bandNumStyle
		sty.XAlign = draw.XCenter
		c.FillText(sty, vg.Point{X: x(e.at), Y: base}, numLabel(i))
	}

	tiles := align(p, draw.Canvas{Canvas: c.Canvas, Rectangle: rect})
	for i, pl := range p.plots {
		pl.Draw(tiles[i])
	}
	if p.empty != "" {
		dc := p.plots[0].DataCanvas(tiles[0])
		sty := noteStyle
		sty.XAlign, sty.YAlign = draw.XCenter, draw.YCenter
		c.FillText(sty, dc.Center(), p.empty)
	}

	l := newLegend()
	for _, e := range p.legend {
		l.Add(e.name, e.thumbs...)
	}
	l.Draw(draw.Canvas{Canvas: c.Canvas, Rectangle: vg.Rectangle{
		Min: vg.Point{X: rect.Max.X + legendGap, Y: rect.Min.Y},
		Max: vg.Point{X: x0 + PanelWidth - margin, Y: rect.Max.Y},
	}})

	// The key: number, time, what happened.
	if len(p.events) == 0 && p.moreEvents == 0 {
		return
	}
	cols := 1
	if len(p.events) >= keyCols2From {
		cols = 2
	}
	perCol := (len(p.events) + cols - 1) / cols
	colW := (PanelWidth - 2*margin) / vg.Length(cols)
	top := rect.Min.Y - keyGap
	numW := keyNumStyle.Width(numLabel(len(p.events)))
	timeW := vg.Length(0)
	for _, e := range p.events {
		timeW = max32(timeW, keyStyle.Width(atLabel(e.at))*fontSlack)
	}
	for i, e := range p.events {
		col, row := 0, i
		if perCol > 0 {
			col, row = i/perCol, i%perCol
		}
		bx := x0 + margin + vg.Length(col)*colW
		by := top - vg.Length(row)*keyRowH
		ns := keyNumStyle
		ns.XAlign, ns.YAlign = draw.XRight, draw.YTop
		c.FillText(ns, vg.Point{X: bx + numW, Y: by}, numLabel(i))
		ts := keyStyle
		ts.XAlign, ts.YAlign = draw.XRight, draw.YTop
		c.FillText(ts, vg.Point{X: bx + numW + 10 + timeW, Y: by}, atLabel(e.at))
		ds := keyStyle
		ds.YAlign = draw.YTop
		tx := bx + numW + 10 + timeW + 12
		c.FillText(ds, vg.Point{X: tx, Y: by}, fit(ds, e.text, (bx+colW-tx-10)/fontSlack))
	}
	if p.moreEvents > 0 {
		ms := keyStyle
		ms.Color = midGrey
		ms.YAlign = draw.YTop
		c.FillText(ms, vg.Point{X: x0 + margin, Y: top - vg.Length(perCol)*keyRowH}, "… and "+itoa(p.moreEvents)+" more events, not drawn")
	}
}
