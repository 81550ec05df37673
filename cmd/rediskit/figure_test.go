//go:build unix

package main

import (
	"encoding/xml"
	"errors"
	"image/png"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"
)

// svgTexts decodes an SVG file as XML, to its end (a malformed file
// fails the test), and returns the text of its <text> elements.
func svgTexts(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec := xml.NewDecoder(f)
	var texts []string
	var cur *strings.Builder
	sawSVG := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not well-formed XML: %v", path, err)
		}
		switch el := tok.(type) {
		case xml.StartElement:
			sawSVG = sawSVG || el.Name.Local == "svg"
			if el.Name.Local == "text" {
				cur = &strings.Builder{}
			}
		case xml.CharData:
			if cur != nil {
				cur.Write(el)
			}
		case xml.EndElement:
			if el.Name.Local == "text" && cur != nil {
				texts = append(texts, cur.String())
				cur = nil
			}
		}
	}
	if !sawSVG {
		t.Fatalf("%s has no <svg> element", path)
	}
	return texts
}

// textsWith counts the texts that contain s.
func textsWith(texts []string, s string) int {
	n := 0
	for _, text := range texts {
		if strings.Contains(text, s) {
			n++
		}
	}
	return n
}

// checkDrillFigure checks the drill's pictures against its report: the
// SVG names every node that served a write or a read and every event of
// the timeline, and says no secret; the PNG decodes.
func checkDrillFigure(t *testing.T, svg, pngPath string, rep drillJSON) {
	t.Helper()
	texts := svgTexts(t, svg)
	all := strings.Join(texts, "\n")
	assertNoSecrets(t, all)
	for _, ops := range []drillOpsJSON{rep.Writes, rep.Reads} {
		for node := range ops.ByNode {
			if textsWith(texts, node) == 0 {
				t.Errorf("%s does not name node %s, which served operations", svg, node)
			}
		}
	}
	names := map[string]int{}
	for _, ev := range rep.Events {
		names[ev.Event]++
	}
	for name, n := range names {
		if got := textsWith(texts, name); got < n {
			t.Errorf("%s names the event %q %d times, the report has it %d times; texts:\n%s", svg, name, got, n, all)
		}
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if cfg, err := png.DecodeConfig(f); err != nil || cfg.Width < 100 || cfg.Height < 100 {
		t.Errorf("%s: %+v, %v", pngPath, cfg, err)
	}
}

// keyTime is the time column of a figure's key of events ("+2.002s").
var keyTime = regexp.MustCompile(`^\+\d+\.\d{3}s$`)

// checkProbeFigure checks probe's SVG: well-formed, every node named, and
// one row in the key of events per election change the probe printed.
func checkProbeFigure(t *testing.T, svg string, nodes []string, changes int) {
	t.Helper()
	texts := svgTexts(t, svg)
	for _, node := range nodes {
		if textsWith(texts, node) == 0 {
			t.Errorf("%s does not name node %s", svg, node)
		}
	}
	keyed := 0
	for _, text := range texts {
		if keyTime.MatchString(strings.TrimSpace(text)) {
			keyed++
		}
	}
	if keyed != changes {
		t.Errorf("%s keys %d events, the probe printed %d election changes; texts %q", svg, keyed, changes, texts)
	}
}
