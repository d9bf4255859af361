// Package testsupport holds the helpers the pure unit tests of several
// packages share: the cache's form of an object, the work queue's
// contents and the code blocks of a Markdown text. (The control-plane
// tests under test/ share test/support.)
// Only tests import it.
package testsupport

import (
	"strings"
	"testing"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/vmobs/vmobs/internal/projection"
)

// Project is o as the cache holds it (projection.Transform); an object
// projection does not know fails the test.
func Project(t testing.TB, o any) client.Object {
	t.Helper()
	p, err := projection.Transform(o)
	if err != nil {
		t.Fatal(err)
	}
	obj, ok := p.(client.Object)
	if !ok {
		t.Fatalf("projection of %T is a %T, not a client.Object", o, p)
	}
	return obj
}

// Drain takes every request the queue holds now, without waiting, and
// returns their names. The caller makes sure whatever enqueues has
// finished first.
func Drain(q workqueue.TypedRateLimitingInterface[reconcile.Request]) map[string]bool {
	got := map[string]bool{}
	for q.Len() > 0 {
		it, _ := q.Get()
		got[it.Name] = true
		q.Done(it)
		q.Forget(it)
	}
	return got
}

// CodeBlocks returns the fenced code blocks of a Markdown text in the
// given language, for the tests that run what the docs show.
func CodeBlocks(md, lang string) []string {
	var out []string
	rest := md
	for {
		i := strings.Index(rest, "```"+lang+"\n")
		if i < 0 {
			return out
		}
		rest = rest[i+len("```"+lang+"\n"):]
		j := strings.Index(rest, "\n```")
		if j < 0 {
			return out
		}
		out = append(out, rest[:j+1])
		rest = rest[j+4:]
	}
}
