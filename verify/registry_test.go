package verify

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aqlguard/aqlguard/config"
)

// TestOpenChannel: the channels open by the name [verify] gives them,
// a name this build lacks is an error, and the channel a caller falls
// back to then approves nothing.
func TestOpenChannel(t *testing.T) {
	ch, err := OpenChannel(config.Verify{Channel: "command", Command: []string{"/bin/true"}}, ChannelSetup{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ch.(*CommandChannel); !ok || ch.Name() != "command" {
		t.Errorf("channel command opened %T %q", ch, ch.Name())
	}
	_, err = OpenChannel(config.Verify{Channel: "pager"}, ChannelSetup{})
	if err == nil || !strings.Contains(err.Error(), `[verify] channel = "pager" is not in this build (it has command, dialog)`) {
		t.Fatalf("an unknown channel: %v", err)
	}
	u := Unreachable(err)
	if a, aerr := u.Ask(context.Background(), Request{}); a != None || !errors.Is(aerr, err) {
		t.Errorf("Unreachable.Ask = %q, %v", a, aerr)
	}
	if serr := u.Show(context.Background(), Request{}); !errors.Is(serr, err) {
		t.Errorf("Unreachable.Show = %v", serr)
	}
}
