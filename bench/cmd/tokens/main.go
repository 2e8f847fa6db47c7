// Command tokens measures what a client must load before its first call: the
// tools array of the tools/list result, as the client receives it, in bytes
// and in BPE tokens.
//
// Baseline is the downstream servers' own tools/list, combined into one array
// (what a client launching them directly would load). It is compared with
// aqlguard over the same servers in the modes passthrough, semantic, single
// and all.
//
// Tokenizer: OpenAI's o200k_base (and cl100k_base for comparison) from
// github.com/tiktoken-go/tokenizer, whose vocabularies are compiled into the
// binary, so it works offline. Anthropic's tokenizer is not public; o200k is a
// modern real BPE vocabulary and what matters here is the ratio between modes.
//
// Usage:
//
//	tokens -aqlguard BIN -server 'ev=/path/everything-server' \
//	       -server 'fs=/path/node /path/server-filesystem/dist/index.js /tmp/dir' [-out FILE.json]
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/aqlguard/aqlguard/bench/internal/harness"
	"github.com/tiktoken-go/tokenizer"
)

// Row is one measured tools array.
type Row struct {
	Mode    string   `json:"mode"`
	Tools   int      `json:"tools"`
	Names   []string `json:"tool_names"`
	Bytes   int      `json:"bytes"`
	O200k   int      `json:"tokens_o200k_base"`
	Cl100k  int      `json:"tokens_cl100k_base"`
	LLMO200 int      `json:"tokens_o200k_model_fields"`
	// Reductions vs baseline in o200k tokens, percent: of the whole array,
	// and of the model fields only.
	Reduction    float64 `json:"reduction_pct_o200k"`
	ReductionLLM float64 `json:"reduction_pct_o200k_model_fields"`
	// PerServer is set on the baseline row.
	PerServer map[string]Row `json:"per_server,omitempty"`
}

// Report is the JSON output.
type Report struct {
	Time      string            `json:"time"`
	Tokenizer string            `json:"tokenizer"`
	Servers   map[string]string `json:"servers"`
	Rows      []Row             `json:"rows"`
	Arrays    map[string]string `json:"tools_arrays"`
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tokens:", err)
		os.Exit(1)
	}
}

func run(argv []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	var servers harness.Servers
	fs.Var(&servers, "server", "downstream server as 'name=command args...' (repeatable, at least one)")
	aqlguard := fs.String("aqlguard", "", "aqlguard binary (required)")
	out := fs.String("out", "", "write the JSON report (with every tools array) to FILE")
	timeout := fs.Duration("timeout", 5*time.Minute, "timeout of the whole run")
	if err := fs.Parse(argv); err != nil {
		return err
	}
	if *aqlguard == "" || len(servers) == 0 {
		return fmt.Errorf("-aqlguard and at least one -server are required")
	}
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()

	o200, err := tokenizer.Get(tokenizer.O200kBase)
	if err != nil {
		return err
	}
	cl100, err := tokenizer.Get(tokenizer.Cl100kBase)
	if err != nil {
		return err
	}
	if err := selfTest(cl100); err != nil {
		return err
	}
	count := func(c tokenizer.Codec, s string) (int, error) { return c.Count(s) }
	measure := func(mode string, tools []json.RawMessage) (Row, string, error) {
		parts := make([]string, len(tools))
		for i, t := range tools {
			parts[i] = string(t)
		}
		arr := "[" + strings.Join(parts, ",") + "]"
		llm, err := modelFields(tools)
		if err != nil {
			return Row{}, "", fmt.Errorf("%s: %w", mode, err)
		}
		row := Row{Mode: mode, Tools: len(tools), Bytes: len(arr)}
		for _, t := range tools {
			var n struct{ Name string }
			_ = json.Unmarshal(t, &n)
			row.Names = append(row.Names, n.Name)
		}
		if row.O200k, err = count(o200, arr); err == nil {
			if row.Cl100k, err = count(cl100, arr); err == nil {
				row.LLMO200, err = count(o200, llm)
			}
		}
		return row, arr, err
	}

	dir, err := os.MkdirTemp("", "aqlguard-tokens-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	rep := Report{
		Time: time.Now().UTC().Format(time.RFC3339),
		Tokenizer: "tiktoken o200k_base (headline) and cl100k_base, github.com/tiktoken-go/tokenizer v0.10.0, " +
			"vocabulary compiled in (offline). Anthropic's tokenizer is not public; counts for Claude differ, ratios should not much.",
		Servers: map[string]string{}, Arrays: map[string]string{},
	}

	// Baseline: each server directly.
	var combined []json.RawMessage
	base := Row{Mode: "baseline (direct)", PerServer: map[string]Row{}}
	for _, s := range servers {
		rep.Servers[s.Name] = strings.Join(s.Argv, " ")
		tools, err := listTools(ctx, s.Argv, nil)
		if err != nil {
			return fmt.Errorf("server %s directly: %w", s.Name, err)
		}
		if len(tools) == 0 {
			return fmt.Errorf("server %s offers no tools", s.Name)
		}
		row, _, err := measure(s.Name, tools)
		if err != nil {
			return err
		}
		row.Names = nil
		base.PerServer[s.Name] = row
		combined = append(combined, tools...)
	}
	row, arr, err := measure(base.Mode, combined)
	if err != nil {
		return err
	}
	row.PerServer = base.PerServer
	rep.Rows = append(rep.Rows, row)
	rep.Arrays[row.Mode] = arr

	for _, mode := range []string{"passthrough", "semantic", "single", "all"} {
		cfg, err := harness.WriteConfig(dir, mode, servers)
		if err != nil {
			return err
		}
		tools, err := listTools(ctx, harness.AqlguardArgv(*aqlguard, cfg), servers)
		if err != nil {
			return fmt.Errorf("aqlguard %s: %w", mode, err)
		}
		row, arr, err := measure("aqlguard "+mode, tools)
		if err != nil {
			return err
		}
		rep.Rows = append(rep.Rows, row)
		rep.Arrays[row.Mode] = arr
	}
	if pt := rep.Rows[1]; pt.Tools < rep.Rows[0].Tools {
		return fmt.Errorf("passthrough offers %d tools, fewer than the %d the servers offer directly", pt.Tools, rep.Rows[0].Tools)
	}
	for i := range rep.Rows {
		r := &rep.Rows[i]
		r.Reduction = 100 * (1 - float64(r.O200k)/float64(rep.Rows[0].O200k))
		r.ReductionLLM = 100 * (1 - float64(r.LLMO200)/float64(rep.Rows[0].LLMO200))
	}

	writeMarkdown(stdout, &rep, servers)
	if *out != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		return os.WriteFile(*out, append(b, '\n'), 0o644)
	}
	return nil
}

// listTools starts argv, lists its tools raw and stops it. With servers set,
// argv is aqlguard, and it must show an operation of every server first.
func listTools(ctx context.Context, argv []string, servers []harness.Server) ([]json.RawMessage, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	s, err := harness.Start(ctx, argv)
	if err != nil {
		return nil, err
	}
	defer s.Close()
	if servers != nil {
		if err := s.CheckServers(ctx, servers); err != nil {
			return nil, err
		}
	}
	tools, err := s.ListToolsRaw(ctx)
	if err != nil {
		return nil, err
	}
	return tools, s.Close()
}

// modelFields keeps what an LLM API is sent for each tool (name, description,
// input schema), dropping annotations, titles, output schemas and _meta.
func modelFields(tools []json.RawMessage) (string, error) {
	var out []map[string]json.RawMessage
	for _, t := range tools {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(t, &m); err != nil {
			return "", err
		}
		keep := map[string]json.RawMessage{}
		for _, k := range []string{"name", "description", "inputSchema"} {
			if v, ok := m[k]; ok {
				keep[k] = v
			}
		}
		out = append(out, keep)
	}
	b, err := json.Marshal(out)
	return string(b), err
}

// selfTest checks the tokenizer against a value published by tiktoken.
func selfTest(cl100 tokenizer.Codec) error {
	ids, _, err := cl100.Encode("hello world")
	if err != nil || !slices.Equal(ids, []uint{15339, 1917}) {
		return fmt.Errorf("tokenizer self-test failed: cl100k_base(\"hello world\") = %v, %v; want [15339 1917]", ids, err)
	}
	return nil
}

func writeMarkdown(w io.Writer, rep *Report, servers []harness.Server) {
	var names []string
	for _, s := range servers {
		b := rep.Rows[0].PerServer[s.Name]
		names = append(names, fmt.Sprintf("%s (%d tools, %d B, %d tok)", s.Name, b.Tools, b.Bytes, b.O200k))
	}
	fmt.Fprintf(w, "tools/list tools array, servers: %s\ntokenizer: %s\n\n", strings.Join(names, ", "), rep.Tokenizer)
	fmt.Fprintln(w, "| mode | tools | bytes | tokens o200k | tokens cl100k | reduction (o200k) | o200k, name+description+inputSchema only | reduction of those |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|")
	for i, r := range rep.Rows {
		red, redLLM := "—", "—"
		if i > 0 {
			red, redLLM = fmt.Sprintf("%.1f%%", r.Reduction), fmt.Sprintf("%.1f%%", r.ReductionLLM)
		}
		fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %s | %d | %s |\n", r.Mode, r.Tools, r.Bytes, r.O200k, r.Cl100k, red, r.LLMO200, redLLM)
	}
	fmt.Fprintln(w, "\nreduction = 1 − mode tokens / baseline tokens. The last two columns keep only what an LLM API is sent per tool (no annotations, title, outputSchema, execution, _meta).")
}
