package httpguard_test

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rediskit/rediskit/cluster"
	"github.com/rediskit/rediskit/guard"
	"github.com/rediskit/rediskit/guard/httpguard"
	"github.com/rediskit/rediskit/multidb"
	"github.com/rediskit/rediskit/sentinel"
)

// errValues are the exported error values (Err…) of the packages whose
// errors a route may answer, with the status each must map to, bare or
// wrapped: 503 for a condition that passes (the value answers
// RetryAdvice, as the typed errors matching it do), 429 and 409 for
// guard's, 500 for a caller's mistake or a closed client.
var errValues = map[string]struct {
	err    error
	status int
}{
	"sentinel.ErrClosed":               {sentinel.ErrClosed, http.StatusInternalServerError},
	"sentinel.ErrNoReplica":            {sentinel.ErrNoReplica, http.StatusServiceUnavailable},
	"sentinel.ErrFailoverInProgress":   {sentinel.ErrFailoverInProgress, http.StatusServiceUnavailable},
	"sentinel.ErrFailoverNotConfirmed": {sentinel.ErrFailoverNotConfirmed, http.StatusServiceUnavailable},
	"sentinel.ErrNotDurable":           {sentinel.ErrNotDurable, http.StatusServiceUnavailable},
	"sentinel.ErrAOFUnavailable":       {sentinel.ErrAOFUnavailable, http.StatusInternalServerError},
	"sentinel.ErrMasterChanged":        {sentinel.ErrMasterChanged, http.StatusServiceUnavailable},
	"sentinel.ErrSubscriptionMoved":    {sentinel.ErrSubscriptionMoved, http.StatusServiceUnavailable},
	"sentinel.ErrUnsupported":          {sentinel.ErrUnsupported, http.StatusInternalServerError},
	"sentinel.ErrUnknownMaster":        {sentinel.ErrUnknownMaster, http.StatusInternalServerError},
	"sentinel.ErrCursorLost":           {sentinel.ErrCursorLost, http.StatusServiceUnavailable},

	"cluster.ErrClosed":            {cluster.ErrClosed, http.StatusInternalServerError},
	"cluster.ErrSubscriptionMoved": {cluster.ErrSubscriptionMoved, http.StatusServiceUnavailable},
	"cluster.ErrNotDurable":        {cluster.ErrNotDurable, http.StatusServiceUnavailable},
	"cluster.ErrAOFUnavailable":    {cluster.ErrAOFUnavailable, http.StatusInternalServerError},
	"cluster.ErrNoReplica":         {cluster.ErrNoReplica, http.StatusServiceUnavailable},
	"cluster.ErrCursorLost":        {cluster.ErrCursorLost, http.StatusServiceUnavailable},
	"cluster.ErrUnsupported":       {cluster.ErrUnsupported, http.StatusInternalServerError},

	"multidb.ErrTemporarilyUnavailable": {multidb.ErrTemporarilyUnavailable, http.StatusServiceUnavailable},
	"multidb.ErrNoHealthyDatabase":      {multidb.ErrNoHealthyDatabase, http.StatusServiceUnavailable},
	"multidb.ErrDatabaseChanged":        {multidb.ErrDatabaseChanged, http.StatusServiceUnavailable},
	"multidb.ErrUnhealthy":              {multidb.ErrUnhealthy, http.StatusServiceUnavailable},
	"multidb.ErrProbePanicked":          {multidb.ErrProbePanicked, http.StatusInternalServerError},
	"multidb.ErrUnknownDatabase":        {multidb.ErrUnknownDatabase, http.StatusInternalServerError},
	"multidb.ErrClosed":                 {multidb.ErrClosed, http.StatusInternalServerError},
	"multidb.ErrUnsupported":            {multidb.ErrUnsupported, http.StatusInternalServerError},
	"multidb.ErrReplicationLag":         {multidb.ErrReplicationLag, http.StatusServiceUnavailable},
	"multidb.ErrSubscriptionMoved":      {multidb.ErrSubscriptionMoved, http.StatusServiceUnavailable},
	"multidb.ErrCursorLost":             {multidb.ErrCursorLost, http.StatusServiceUnavailable},

	"guard.ErrUnavailable":     {guard.ErrUnavailable, http.StatusServiceUnavailable},
	"guard.ErrTooManyRequests": {guard.ErrTooManyRequests, http.StatusTooManyRequests},
	"guard.ErrBusy":            {guard.ErrBusy, http.StatusConflict},
}

// TestErrorValuesStatus: every exported error value maps to its status,
// bare and wrapped; a value that passes (503) says whether the work may
// have run, as a Retry-After.
func TestErrorValuesStatus(t *testing.T) {
	for name, tt := range errValues {
		for _, err := range []error{tt.err, fmt.Errorf("handler: %w", tt.err)} {
			if got := httpguard.StatusCode(err); got != tt.status {
				t.Errorf("%s (%v): status %d, want %d", name, err, got, tt.status)
			}
		}
		// guard.ErrUnavailable is matched by errors that carry their own
		// wait; the others say theirs themselves.
		if tt.status == http.StatusServiceUnavailable && name != "guard.ErrUnavailable" && httpguard.RetryAfter(tt.err) == "" {
			t.Errorf("%s: a 503 without a Retry-After", name)
		}
	}
	if !errors.Is(fmt.Errorf("x: %w", sentinel.ErrFailoverInProgress), sentinel.ErrFailoverInProgress) {
		t.Error("errors.Is lost its match")
	}
}

// TestErrorValuesListed: every exported Err… value the packages declare
// is in errValues, so that a new one cannot go unmapped.
func TestErrorValuesListed(t *testing.T) {
	for _, pkg := range []string{"sentinel", "cluster", "multidb", "guard"} {
		files, err := filepath.Glob(filepath.Join("..", "..", pkg, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", pkg, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				gd, ok := d.(*ast.GenDecl)
				if !ok || gd.Tok != token.VAR {
					continue
				}
				for _, spec := range gd.Specs {
					for _, n := range spec.(*ast.ValueSpec).Names {
						if n.IsExported() && strings.HasPrefix(n.Name, "Err") {
							if _, ok := errValues[pkg+"."+n.Name]; !ok {
								t.Errorf("%s.%s (%s) is not in errValues: give it its HTTP status", pkg, n.Name, filepath.Base(f))
							}
						}
					}
				}
			}
		}
	}
}

// TestClusterTypedErrorsStatus: the cluster client's typed errors answer
// RetryAdvice as sentinel's and multidb's do (503), bare and wrapped; a
// caller's mistake stays 500.
func TestClusterTypedErrorsStatus(t *testing.T) {
	for _, tt := range []struct {
		err    error
		status int
	}{
		{&cluster.NodeError{Addr: "a:1", Write: true, MayHaveExecuted: true, Err: errors.New("EOF")}, http.StatusServiceUnavailable},
		{&cluster.MasterChangedError{OldMaster: "a:1", NewMaster: "b:1"}, http.StatusServiceUnavailable},
		{&cluster.NoMasterError{Slot: 7}, http.StatusServiceUnavailable},
		{&cluster.NotDurableError{Master: "a:1", NotSent: true}, http.StatusServiceUnavailable},
		{&cluster.NoReplicaError{}, http.StatusServiceUnavailable},
		{&cluster.CursorError{}, http.StatusServiceUnavailable},
		{&cluster.CrossSlotError{Slots: []int{1, 2}}, http.StatusInternalServerError},
	} {
		for _, err := range []error{tt.err, fmt.Errorf("handler: %w", tt.err)} {
			if got := httpguard.StatusCode(err); got != tt.status {
				t.Errorf("%T: status %d, want %d", tt.err, got, tt.status)
			}
		}
	}
}
