package exampleconfig

import "testing"

func TestUncomment(t *testing.T) {
	in := "# prose\n#agent = \"a\"\n#deny = [\n#  # why\n#  \"x\",\n#]\n# ---\n#[servers.categories]\n##heading\nkept = 1\n"
	want := "# prose\nagent = \"a\"\ndeny = [\n  # why\n  \"x\",\n]\n# ---\n[servers.categories]\n##heading\nkept = 1\n"
	if got := string(Uncomment([]byte(in))); got != want {
		t.Errorf("Uncomment:\n%s\nwant:\n%s", got, want)
	}
}
