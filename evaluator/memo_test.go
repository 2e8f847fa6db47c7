package evaluator

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/policy/shell"
)

func TestScriptMemo(t *testing.T) {
	var m scriptMemo
	for _, line := range []string{"git status", "sudo rm -rf /", "echo $(rm -rf /)", "bash -c 'ls; rm x'"} {
		first, again := m.analyze(line), m.analyze(line)
		if first != again {
			t.Errorf("%q: analysed twice", line)
		}
		if want := shell.Analyze(line); !reflect.DeepEqual(first, want) {
			t.Errorf("%q: memo %+v, Analyze %+v", line, first, want)
		}
	}
	long := "ls " + strings.Repeat("x", maxMemoLine)
	if first := m.analyze(long); first == m.analyze(long) {
		t.Error("a line over maxMemoLine is kept")
	}
	wordy := strings.Repeat("a;", maxMemoWords+1)
	if first := m.analyze(wordy); first == m.analyze(wordy) {
		t.Error("a script over maxMemoWords is kept")
	}
	// A full memo starts again rather than growing.
	for i := range maxMemoScripts + 10 {
		m.analyze(fmt.Sprintf("ls %d", i))
	}
	if n := m.n.Load(); n > maxMemoScripts {
		t.Errorf("memo holds %d lines, limit %d", n, maxMemoScripts)
	}
	count := 0
	m.lines.Load().Range(func(any, any) bool { count++; return true })
	if count > maxMemoScripts {
		t.Errorf("memo map holds %d lines, limit %d", count, maxMemoScripts)
	}
}
