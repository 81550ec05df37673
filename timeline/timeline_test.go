package timeline

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"flag"
	"fmt"
	"image/png"
	"io"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gonum.org/v1/plot/vg"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden.svg from the current renderer")

func loadDrill(t testing.TB, path string) *Drill {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d Drill
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &d
}

func loadProbe(t testing.TB, path string) *Probe {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var p Probe
	if err := json.Unmarshal(b, &p); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return &p
}

func render(t testing.TB, fig Figure, f Format) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := fig.Render(&buf, f); err != nil {
		t.Fatalf("Render(%v): %v", f, err)
	}
	return buf.Bytes()
}

// svgTexts decodes the whole SVG (failing on any XML error) and returns
// the text of its <text> elements in document order.
func svgTexts(t testing.TB, svg []byte) []string {
	t.Helper()
	texts, err := parseSVG(svg)
	if err != nil {
		t.Fatalf("the SVG is not well-formed XML: %v", err)
	}
	return texts
}

func parseSVG(svg []byte) ([]string, error) {
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var texts []string
	depth, inText := 0, -1
	var cur strings.Builder
	root := false
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		switch tok := tok.(type) {
		case xml.StartElement:
			if depth == 0 {
				if tok.Name.Local != "svg" {
					return nil, fmt.Errorf("root element <%s>, want <svg>", tok.Name.Local)
				}
				root = true
			}
			depth++
			if tok.Name.Local == "text" {
				inText = depth
				cur.Reset()
			}
		case xml.EndElement:
			if depth == inText {
				texts = append(texts, cur.String())
				inText = -1
			}
			depth--
		case xml.CharData:
			if inText >= 0 {
				cur.Write(tok)
			}
		}
	}
	if !root || depth != 0 {
		return nil, errors.New("no complete <svg> element")
	}
	return texts, nil
}

// legendOf is the texts that are legend series: those the figure's
// legend names start with.
func legendOf(texts []string) []string {
	var out []string
	for _, s := range texts {
		for _, p := range []string{"writes via ", "reads via ", "error: ", "acknowledged, lost (", "duplicated ("} {
			if strings.HasPrefix(s, p) {
				out = append(out, s)
			}
		}
	}
	slices.Sort(out)
	return out
}

// wantDrillLegend is the legend the input calls for, worked out from the
// ops without the renderer's code.
func wantDrillLegend(d *Drill) []string {
	set := map[string]bool{}
	lost, dup := 0, 0
	for _, o := range d.Ops {
		if o.Node == "" {
			o.Node = "unknown node" // the documented name
		}
		switch {
		case o.Err != "":
			set["error: "+o.Err] = true
		case o.Kind == KindWrite:
			set["writes via "+o.Node] = true
		case o.Kind == KindRead:
			set["reads via "+o.Node] = true
		}
		if o.Kind == KindWrite && o.Err == "" && o.Lost {
			lost++
		}
		if o.Kind == KindWrite && o.Duplicated {
			dup++
		}
	}
	if lost > 0 {
		set["acknowledged, lost ("+strconv.Itoa(lost)+")"] = true
	}
	if dup > 0 {
		set["duplicated ("+strconv.Itoa(dup)+")"] = true
	}
	var out []string
	for s := range set {
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}

var timeText = regexp.MustCompile(`^\+\d+\.\d{3}s$`)

// checkKey checks that the key lists events, in order, each as its
// number, "+S.SSSs" and "name: detail", and that the band above the plot
// numbers each one too.
func checkKey(t *testing.T, texts []string, events []Event) {
	t.Helper()
	var times []int
	for i, s := range texts {
		if timeText.MatchString(s) {
			times = append(times, i)
		}
	}
	if len(times) != len(events) {
		t.Fatalf("the key has %d times, want %d (one per event): %q", len(times), len(events), texts)
	}
	for i, e := range events {
		j := times[i]
		if j == 0 || j+1 >= len(texts) {
			t.Fatalf("key line %d: no number or text around %q", i+1, texts[j])
		}
		want := []string{strconv.Itoa(i + 1), fmt.Sprintf("+%.3fs", e.At.Seconds()), e.Name + ": " + e.Detail}
		got := texts[j-1 : j+2]
		if !slices.Equal(got, want) {
			t.Errorf("key line %d = %q, want %q", i+1, got, want)
		}
		if n := slices.Index(texts, strconv.Itoa(i+1)); n < 0 || n >= j-1 {
			t.Errorf("event %d has no number above the plot", i+1)
		}
	}
}

func TestFormatOf(t *testing.T) {
	tests := []struct {
		path    string
		want    Format
		wantErr string
	}{
		{path: "a.svg", want: SVG},
		{path: "dir/b.SVG", want: SVG},
		{path: "c.png", want: PNG},
		{path: "/tmp/x.y/d.Png", want: PNG},
		{path: "e.jpg", wantErr: `unknown picture extension ".jpg"`},
		{path: "f", wantErr: "has no extension"},
		{path: "svg", wantErr: "has no extension"},
		{path: "g.svg.gz", wantErr: `".gz"`},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			got, err := FormatOf(tt.path)
			if tt.wantErr != "" {
				var fe *FormatError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FormatOf(%q) = %v, %v; want a *FormatError with %q", tt.path, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("FormatOf(%q) = %v, %v; want %v", tt.path, got, err, tt.want)
			}
		})
	}
	if err := (&Drill{}).Render(io.Discard, Format(7)); err == nil || !strings.Contains(err.Error(), "Format(7)") {
		t.Errorf("Render(Format(7)) = %v, want an unknown-format error", err)
	}
}

func TestDrillSVG(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		d    *Drill
		note string // a text the picture must hold
	}{
		{name: "golden", d: loadDrill(t, "testdata/drill.json")},
		{name: "empty", d: &Drill{Run: Run{Title: "nothing"}}, note: "no operations"},
		{name: "errors only", d: &Drill{Ops: []Op{
			{At: 10 * ms, Kind: KindWrite, Err: "timeout"},
			{At: 20 * ms, Kind: KindRead, Err: "connection refused"},
		}}},
		{name: "unknown node, lost and duplicated", d: &Drill{Ops: []Op{
			{At: 10 * ms, Kind: KindWrite, Lost: true},
			{At: 20 * ms, Kind: KindWrite, Node: "10.0.0.1:6379", Duplicated: true},
			{At: 30 * ms, Kind: KindWrite, Err: "timeout", Duplicated: true},
		}}},
		{name: "reads only", d: &Drill{Length: 2 * time.Second, Ops: []Op{
			{At: 1500 * ms, Kind: KindRead, Node: "b:2"}, {At: 1600 * ms, Kind: KindRead, Node: "a:1"},
		}}},
		{name: "unknown kinds", d: &Drill{Ops: []Op{{At: ms, Kind: "scan"}}}, note: "1 operations of no known kind not drawn"},
		{name: "events and windows", d: &Drill{
			Ops:     []Op{{At: 900 * ms, Kind: KindWrite, Node: "n:1"}},
			Events:  []Event{{At: 100 * ms, Name: "a", Detail: "first"}, {At: 101 * ms, Name: "b", Detail: "same place"}, {At: 800 * ms, Name: "c", Detail: "<&>\"'"}},
			Windows: []Window{{From: 100 * ms, To: 300 * ms, Label: "hold"}},
		}, note: "hold (200 ms)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := render(t, tt.d, SVG)
			texts := svgTexts(t, svg)
			if got, want := legendOf(texts), wantDrillLegend(tt.d); !slices.Equal(got, want) {
				t.Errorf("legend series = %q, want %q", got, want)
			}
			checkKey(t, texts, tt.d.Events)
			if tt.d.Run.Title != "" && !slices.Contains(texts, tt.d.Run.Title) {
				t.Errorf("no title %q in %q", tt.d.Run.Title, texts)
			}
			if c := tt.d.Run.Caption(); c != "" && !slices.Contains(texts, c) {
				t.Errorf("no caption %q in %q", c, texts)
			}
			if tt.note != "" && !slices.ContainsFunc(texts, func(s string) bool { return strings.Contains(s, tt.note) }) {
				t.Errorf("no %q in %q", tt.note, texts)
			}
			if bytes.Contains(svg, []byte("NaN")) || bytes.Contains(svg, []byte("Inf")) {
				t.Error("the SVG has a NaN or an infinity")
			}
			if bytes.Contains(svg, []byte("@font-face")) {
				t.Error("the SVG embeds a font")
			}
		})
	}
}

func TestProbeSVG(t *testing.T) {
	ms := time.Millisecond
	tests := []struct {
		name string
		p    *Probe
		want []string // legend series
	}{
		{name: "golden", p: loadProbe(t, "testdata/probe.json"), want: []string{
			"127.0.0.1:6379 (master, then replica)", "127.0.0.1:6380 (replica, then master)", "127.0.0.1:6381 (replica)", "elected", "unhealthy",
		}},
		{name: "empty", p: &Probe{}},
		{name: "one node, no sample yet", p: &Probe{Rounds: []Round{
			{At: 100 * ms, Nodes: []NodeRTT{{Addr: "r:1", Role: "replica", Healthy: true}}},
			{At: 200 * ms, Nodes: []NodeRTT{{Addr: "r:1", Role: "replica", RTT: ms, Healthy: true, Elected: true}}},
		}, Events: []Event{{At: 200 * ms, Name: "elected r:1", Detail: "first sample"}}}, want: []string{"r:1 (replica)", "elected"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			svg := render(t, tt.p, SVG)
			texts := svgTexts(t, svg)
			var got []string
			for _, s := range texts {
				if strings.Contains(s, ":") && strings.HasSuffix(s, ")") && !strings.Contains(s, " UTC") || s == "elected" || s == "unhealthy" {
					got = append(got, s)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("legend series = %q, want %q", got, tt.want)
			}
			checkKey(t, texts, tt.p.Events)
			if len(tt.p.Rounds) == 0 && !slices.Contains(texts, "no probe rounds") {
				t.Errorf("an empty probe says nothing: %q", texts)
			}
		})
	}
}

func TestGolden(t *testing.T) {
	tests := []struct {
		golden string
		fig    Figure
	}{
		{"testdata/drill.golden.svg", loadDrill(t, "testdata/drill.json")},
		{"testdata/probe.golden.svg", loadProbe(t, "testdata/probe.json")},
	}
	for _, tt := range tests {
		t.Run(filepath.Base(tt.golden), func(t *testing.T) {
			got := render(t, tt.fig, SVG)
			if again := render(t, tt.fig, SVG); !bytes.Equal(got, again) {
				t.Fatal("two renders of the same input differ")
			}
			if *update {
				if err := os.WriteFile(tt.golden, got, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(tt.golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to write it)", err)
			}
			if !bytes.Equal(got, want) {
				t.Errorf("the SVG differs from %s (%d bytes, want %d); if the change is meant, run go test -update and look at it", tt.golden, len(got), len(want))
			}
		})
	}
}

func TestPNG(t *testing.T) {
	d := loadDrill(t, "testdata/drill.json")
	p := loadProbe(t, "testdata/probe.json")
	// Rasterizing is slow under -race: each case renders once, the
	// single figures twice (determinism), in parallel.
	tests := []struct {
		name   string
		fig    Figure
		panels int
		twice  bool
	}{
		{"drill", d, 1, true},
		{"probe", p, 1, true},
		{"empty drill", &Drill{}, 1, false},
		{"two drills", SideBySide(d, &Drill{}), 2, false},
		{"two probes", SideBySide(p, &Probe{}), 2, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := render(t, tt.fig, PNG)
			if tt.twice {
				if again := render(t, tt.fig, PNG); !bytes.Equal(b, again) {
					t.Error("two renders of the same input differ")
				}
			}
			img, err := png.Decode(bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			wantW := tt.panels * int(math.Round(float64(PanelWidth/vg.Inch)*PNGDPI))
			if got := img.Bounds().Dx(); got != wantW {
				t.Errorf("width %d px, want %d", got, wantW)
			}
			// The height follows the content; it must be what the SVG
			// says, at PNGDPI, and between 3 and 10 inches.
			texts := render(t, tt.fig, SVG)
			m := regexp.MustCompile(`height="([0-9.]+)pt"`).FindSubmatch(texts)
			if m == nil {
				t.Fatal("no height in the SVG")
			}
			pt, _ := strconv.ParseFloat(string(m[1]), 64)
			if got, want := img.Bounds().Dy(), int(math.Round(pt/72*PNGDPI)); got != want || pt < 3*72 || pt > 10*72 {
				t.Errorf("height %d px (SVG %.0f pt), want %d px, 3 to 10 inches", got, pt, want)
			}
		})
	}
}

func TestSideBySideSharesAxes(t *testing.T) {
	ms := time.Millisecond
	short := &Drill{Length: time.Second, Ops: []Op{{At: 10 * ms, Kind: KindWrite, Node: "b:2"}}}
	long := loadDrill(t, "testdata/drill.json")
	reads := &Drill{Length: 8 * time.Second, Bucket: 100 * ms, Ops: []Op{{At: 7 * time.Second, Kind: KindRead, Node: "a:1", Err: "timeout"}}}
	ps := drillPanels([]*Drill{short, long, reads})
	for i, p := range ps {
		if len(p.plots) != 2 {
			t.Fatalf("panel %d has %d plots, want 2 (one has reads, so all show the reads panel)", i, len(p.plots))
		}
		for j, pl := range p.plots {
			ref := ps[0].plots[j]
			if pl.X.Min != ref.X.Min || pl.X.Max != ref.X.Max || pl.Y.Min != ref.Y.Min || pl.Y.Max != ref.Y.Max {
				t.Errorf("panel %d plot %d: x [%g, %g] y [%g, %g], panel 0: x [%g, %g] y [%g, %g]", i, j,
					pl.X.Min, pl.X.Max, pl.Y.Min, pl.Y.Max, ref.X.Min, ref.X.Max, ref.Y.Min, ref.Y.Max)
			}
		}
		if p.plots[0].X.Max != 8 {
			t.Errorf("panel %d: x axis to %g s, want the longest run's 8 s", i, p.plots[0].X.Max)
		}
		if !strings.Contains(p.plots[0].Y.Label.Text, "per 100 ms") {
			t.Errorf("panel %d: y label %q, want the widest bar (100 ms) for all", i, p.plots[0].Y.Label.Text)
		}
	}
	if ps[0].plots[0].Y.Max < 16 {
		t.Errorf("writes axis to %g, want room for the long run's 16 writes in one bar", ps[0].plots[0].Y.Max)
	}

	pp := probePanels([]*Probe{loadProbe(t, "testdata/probe.json"), {Rounds: []Round{{At: 9 * time.Second, Nodes: []NodeRTT{{Addr: "z:1", RTT: 10 * ms}}}}}})
	a, b := pp[0].plots[0], pp[1].plots[0]
	if a.X.Max != 9 || b.X.Max != 9 || a.Y.Max != b.Y.Max || a.Y.Max < 10 {
		t.Errorf("probe axes: x to %g and %g, y to %g and %g; want both 9 s and the same y over 10 ms", a.X.Max, b.X.Max, a.Y.Max, b.Y.Max)
	}

	// The same node has the same colour in both panels, though alone
	// the short run would give it the first colour.
	shared := &Drill{Ops: []Op{{At: 10 * ms, Kind: KindWrite, Node: "127.0.0.1:6380"}}}
	colour := func(p *panel, name string) any {
		for _, e := range p.legend {
			if e.name == name {
				return e.thumbs[0]
			}
		}
		t.Fatalf("no legend entry %q", name)
		return nil
	}
	alone := drillPanels([]*Drill{shared})[0]
	both := drillPanels([]*Drill{shared, long})
	name := "writes via 127.0.0.1:6380"
	if colour(both[0], name) != colour(both[1], name) {
		t.Errorf("%s: colour %v in one panel, %v in the other", name, colour(both[0], name), colour(both[1], name))
	}
	if colour(alone, name) == colour(both[0], name) {
		t.Errorf("%s: the same colour alone as beside 127.0.0.1:6379 (sorted first); the check above proves nothing", name)
	}
}

func TestSideBySideErrors(t *testing.T) {
	type other struct{ Figure }
	tests := []struct {
		name string
		fig  Figure
		want string
	}{
		{"none", SideBySide(), "no figures"},
		{"mixed", SideBySide(&Drill{}, &Probe{}), "drills and probes"},
		{"nil drill", SideBySide(&Drill{}, (*Drill)(nil)), "figure 1 is a nil *Drill"},
		{"nil probe", SideBySide((*Probe)(nil)), "figure 0 is a nil *Probe"},
		{"foreign", SideBySide(other{}), "only *Drill and *Probe"},
		{"too many", SideBySide(&Drill{}, &Drill{}, &Drill{}, &Drill{}, SideBySide(&Drill{}, &Drill{}, &Drill{})), "at most 6"},
		{"nil drill alone", (*Drill)(nil), "nil *Drill"},
		{"nil probe alone", (*Probe)(nil), "nil *Probe"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.fig.Render(io.Discard, SVG)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Render = %v, want an error with %q", err, tt.want)
			}
		})
	}
	// Nested SideBySide flattens.
	if err := SideBySide(SideBySide(&Drill{}), &Drill{}).Render(io.Discard, SVG); err != nil {
		t.Errorf("nested SideBySide: %v", err)
	}
}

func TestBounds(t *testing.T) {
	ms := time.Millisecond
	many := func(n int, f func(i int) Op) []Op {
		ops := make([]Op, n)
		for i := range ops {
			ops[i] = f(i)
		}
		return ops
	}
	var evs []Event
	for i := range 50 {
		evs = append(evs, Event{At: time.Duration(i) * 10 * ms, Name: "event " + strconv.Itoa(i), Detail: strings.Repeat("long detail ", 40)})
	}
	tests := []struct {
		name  string
		d     *Drill
		check func(t *testing.T, sc *drillScale, p *panel, texts []string)
	}{
		{"a year at 1 ns", &Drill{Length: 365 * 24 * time.Hour, Bucket: 1, Ops: []Op{{At: time.Hour, Kind: KindWrite, Node: "a:1"}}},
			func(t *testing.T, sc *drillScale, p *panel, texts []string) {
				if sc.nb > MaxBuckets {
					t.Errorf("%d bars, want at most %d", sc.nb, MaxBuckets)
				}
				if !strings.Contains(p.caption, "widened from 1 ns") {
					t.Errorf("caption %q does not say the bars were widened", p.caption)
				}
			}},
		{"garbage times", &Drill{Length: -5, Bucket: -1, Ops: []Op{
			{At: -time.Hour, Kind: KindWrite, Node: "a:1"}, {At: math.MaxInt64, Kind: KindWrite, Node: "a:1", Lost: true},
		}, Events: []Event{{At: math.MinInt64, Name: "before"}, {At: math.MaxInt64, Name: "after"}},
			Windows: []Window{{From: math.MaxInt64, To: math.MinInt64, Label: "backwards"}}},
			func(t *testing.T, sc *drillScale, p *panel, texts []string) {
				if sc.nb > MaxBuckets || sc.nb < 1 {
					t.Errorf("%d bars", sc.nb)
				}
				for _, e := range p.events {
					if e.at < 0 || e.at > p.plots[0].X.Max {
						t.Errorf("event at %g s, outside [0, %g]", e.at, p.plots[0].X.Max)
					}
				}
			}},
		{"many nodes and kinds", &Drill{Ops: many(300, func(i int) Op {
			if i%2 == 0 {
				return Op{At: time.Duration(i) * ms, Kind: KindWrite, Node: "node-" + strconv.Itoa(i)}
			}
			return Op{At: time.Duration(i) * ms, Kind: KindRead, Err: "kind " + strconv.Itoa(i)}
		})}, func(t *testing.T, sc *drillScale, p *panel, texts []string) {
			if want := MaxNodes + 1 + MaxErrorKinds + 1; len(p.legend) != want {
				t.Errorf("%d legend entries, want %d", len(p.legend), want)
			}
			if !slices.Contains(texts, "writes via other nodes (142)") || !slices.Contains(texts, "error: other (144 kinds)") {
				t.Errorf("no 'other' series in %q", legendOf(texts))
			}
		}},
		{"many events", &Drill{Events: evs}, func(t *testing.T, sc *drillScale, p *panel, texts []string) {
			if len(p.events) != MaxEvents || p.moreEvents != 50-MaxEvents {
				t.Errorf("%d events keyed, %d more; want %d and %d", len(p.events), p.moreEvents, MaxEvents, 50-MaxEvents)
			}
			if !slices.Contains(texts, "… and 30 more events, not drawn") {
				t.Error("the key does not say how many events it left out")
			}
			for _, s := range texts {
				if len([]rune(s)) > maxKey+1 {
					t.Errorf("a %d-rune text: long details are not cut", len([]rune(s)))
				}
			}
		}},
		{"many windows", &Drill{Windows: slices.Repeat([]Window{{From: ms, To: 2 * ms, Label: "w"}}, 25)},
			func(t *testing.T, sc *drillScale, p *panel, texts []string) {
				if len(p.windows) != MaxWindows || !strings.Contains(p.caption, "5 more windows not drawn") {
					t.Errorf("%d windows drawn, caption %q; want %d and a note", len(p.windows), p.caption, MaxWindows)
				}
			}},
		{"control characters", &Drill{Run: Run{Title: "a\x00b\nc\x1b[31m\xff"}, Ops: []Op{{Kind: KindWrite, Node: "n\x00\ufffe\uffff:1"}}},
			func(t *testing.T, sc *drillScale, p *panel, texts []string) {
				if !slices.Contains(texts, "a b c [31m") || !slices.Contains(texts, "writes via n :1") {
					t.Errorf("control characters not replaced: %q", texts)
				}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sc := newDrillScale([]*Drill{tt.d})
			ps := drillPanels([]*Drill{tt.d})
			svg := render(t, tt.d, SVG)
			texts := svgTexts(t, svg)
			if bytes.Contains(svg, []byte("NaN")) || bytes.Contains(svg, []byte("Inf")) {
				t.Error("the SVG has a NaN or an infinity")
			}
			tt.check(t, sc, ps[0], texts)
		})
	}
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	d := loadDrill(t, "testdata/drill.json")
	for _, name := range []string{"d.svg", "d.png"} {
		path := filepath.Join(dir, name)
		if err := WriteFile(path, d); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o644 || fi.Size() < 1000 {
			t.Errorf("%s: mode %v, %d bytes", name, fi.Mode().Perm(), fi.Size())
		}
	}
	if err := WriteFile(filepath.Join(dir, "d.gif"), d); err == nil {
		t.Error("WriteFile(.gif) succeeded")
	}
	// A failed render leaves the old file and no temporary one.
	if err := WriteFile(filepath.Join(dir, "d.svg"), SideBySide()); err == nil {
		t.Error("WriteFile of an empty SideBySide succeeded")
	}
	if err := WriteFile(filepath.Join(dir, "nodir", "d.svg"), d); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
	ents, _ := os.ReadDir(dir)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"d.png", "d.svg"}) {
		t.Errorf("the directory holds %q, want only d.png and d.svg", names)
	}
	b, _ := os.ReadFile(filepath.Join(dir, "d.svg"))
	svgTexts(t, b)
}

func FuzzDrillRender(f *testing.F) {
	seed, err := os.ReadFile("testdata/drill.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"length":-1,"bucket":1,"ops":[{"at":-9223372036854775808,"kind":"write","lost":true,"duplicated":true}]}`))
	f.Add([]byte(`{"length":9223372036854775807,"ops":[{"at":9223372036854775807,"kind":"read","err":"\u0000\ufffe"}],"windows":[{"from":5,"to":-5,"label":"x"}]}`))
	f.Add([]byte(`{"run":{"title":"\u001b\n"},"events":[{"at":1,"name":"a"},{"at":1,"name":"b"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var d Drill
		if json.Unmarshal(b, &d) != nil {
			return
		}
		var buf bytes.Buffer
		if err := d.Render(&buf, SVG); err != nil {
			t.Fatal(err)
		}
		if _, err := parseSVG(buf.Bytes()); err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
		if bytes.Contains(buf.Bytes(), []byte("NaN")) {
			t.Fatal("NaN in the SVG")
		}
	})
}

func FuzzProbeRender(f *testing.F) {
	seed, err := os.ReadFile("testdata/probe.json")
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Add([]byte(`{"rounds":[{"at":-1,"nodes":[{"addr":"","rtt":-5,"elected":true}]},{"at":9223372036854775807,"nodes":[{"addr":"a","rtt":9223372036854775807}]}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		var p Probe
		if json.Unmarshal(b, &p) != nil {
			return
		}
		var buf bytes.Buffer
		if err := p.Render(&buf, SVG); err != nil {
			t.Fatal(err)
		}
		if _, err := parseSVG(buf.Bytes()); err != nil {
			t.Fatalf("not well-formed: %v", err)
		}
	})
}

func TestDurLabel(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{50 * time.Millisecond, "50 ms"},
		{1500 * time.Millisecond, "1.5 s"},
		{200 * time.Microsecond, "200 µs"},
		{190065117 * time.Nanosecond, "190 ms"},
		{12345 * time.Microsecond, "12.3 ms"},
		{1234567 * time.Nanosecond, "1.23 ms"},
		{999 * time.Nanosecond, "999 ns"},
		{90 * time.Second, "90 s"},
	} {
		if got := durLabel(tc.d); got != tc.want {
			t.Errorf("durLabel(%v) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

// A reads-only drill (a replica-read benchmark) draws the reads panel
// alone; a drill with writes draws both.
func TestReadsOnlyDrill(t *testing.T) {
	for _, tc := range []struct {
		name        string
		ops         []Op
		wantWritesY bool
	}{
		{"reads only", []Op{{At: time.Second, Kind: KindRead, Node: "a"}}, false},
		{"a failed write", []Op{{At: time.Second, Kind: KindRead, Node: "a"}, {At: time.Second, Kind: KindWrite, Err: "timeout"}}, true},
		{"writes only", []Op{{At: time.Second, Kind: KindWrite, Node: "a"}}, true},
	} {
		texts := strings.Join(svgTexts(t, render(t, &Drill{Length: 2 * time.Second, Ops: tc.ops}, SVG)), "\n")
		if got := strings.Contains(texts, "writes"); got != tc.wantWritesY {
			t.Errorf("%s: a writes axis or legend %v, want %v:\n%s", tc.name, got, tc.wantWritesY, texts)
		}
		if !strings.Contains(texts, "reads") && tc.ops[0].Kind == KindRead {
			t.Errorf("%s: no reads panel:\n%s", tc.name, texts)
		}
	}
}
