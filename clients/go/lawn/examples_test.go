package lawn_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestExamples runs every examples/go/*/main.go against a real lawnd, as a user would (`go run`, the
// address as the first argument or in $LAWN_ADDR), with this test's GOPATH environment.
func TestExamples(t *testing.T) {
	source := os.Getenv("LAWN_SOURCE_DIR")
	if source == "" {
		t.Fatal("set LAWN_SOURCE_DIR to the repository (ctest does)")
	}
	d := startLawnd(t)
	c := dial(t, d) // Waits until it serves.
	mains, err := filepath.Glob(filepath.Join(source, "examples", "go", "*", "main.go"))
	if err != nil || len(mains) < 2 {
		t.Fatalf("examples: %v %v", mains, err)
	}
	want := map[string][]string{
		"quickstart": {"hello hi late: false attempt 1"},
		"worker":     {"job-3 refused:", "pending: job-1", "handled job-1", "handled job-2"},
	}
	for _, main := range mains {
		name := filepath.Base(filepath.Dir(main))
		for _, viaEnv := range []bool{false, true} {
			cmd := exec.Command("go", "run", main)
			cmd.Env = os.Environ()
			if viaEnv {
				cmd.Env = append(cmd.Env, "LAWN_ADDR="+d.address())
			} else {
				cmd.Args = append(cmd.Args, d.address())
			}
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%s (address in $LAWN_ADDR: %v): %v\n%s", name, viaEnv, err, out)
			}
			for _, w := range want[name] {
				if !strings.Contains(string(out), w) {
					t.Errorf("%s printed no %q:\n%s", name, w, out)
				}
			}
		}
	}
	// Their acks went out before they exited: nothing is left to deliver again.
	for _, ns := range []string{"demo", "jobs"} {
		waitFor(t, "the examples' acks in "+ns, func() bool { return namespaceStats(t, c, ns).Outbox == 0 })
	}
}
