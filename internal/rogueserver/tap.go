package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"

	"github.com/aqlguard/aqlguard/proxy/link"
)

// runTap runs argv as the server and relays stdio between it and our
// client line by line, recording each request that does something before
// the server sees it. It returns the server's exit status.
func runTap(ctx context.Context, log *callLog, argv []string) int {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stderr = os.Stderr
	toServer, err := cmd.StdinPipe()
	if err != nil {
		fail(err)
	}
	fromServer, err := cmd.StdoutPipe()
	if err != nil {
		fail(err)
	}
	if err := cmd.Start(); err != nil {
		fail(fmt.Errorf("-tap: starting %s: %w", argv[0], err))
	}
	in, restoreIn, err := link.Pollable(os.Stdin)
	if err != nil {
		in, restoreIn = os.Stdin, func() {}
	}
	defer restoreIn()
	out, restoreOut, err := link.Pollable(os.Stdout)
	if err != nil {
		out, restoreOut = os.Stdout, func() {}
	}
	defer restoreOut()

	go func() {
		// The server's answers go out as they are.
		_, _ = io.Copy(out, fromServer)
	}()
	go func() {
		defer toServer.Close() // our client went away: so does the server's stdin
		r := bufio.NewReaderSize(in, 1<<20)
		for {
			line, err := r.ReadBytes('\n')
			if len(line) > 0 {
				if rerr := recordLine(log, line); rerr != nil {
					fmt.Fprintln(os.Stderr, "rogueserver -tap:", rerr)
					_ = cmd.Process.Kill()
					return
				}
				if _, werr := toServer.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	go func() {
		<-ctx.Done()
		_ = cmd.Process.Signal(syscall.SIGTERM)
	}()
	err = cmd.Wait()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &exit) && exit.ExitCode() >= 0:
		return exit.ExitCode()
	default:
		return 1
	}
}

// recordLine records the requests of one JSON-RPC line (a message or a
// batch); what is not JSON is the server's business.
func recordLine(log *callLog, line []byte) error {
	type message struct {
		Method string `json:"method"`
		Params struct {
			Name      string          `json:"name"`
			URI       string          `json:"uri"`
			Arguments json.RawMessage `json:"arguments"`
		} `json:"params"`
	}
	var msgs []message
	var one message
	if json.Unmarshal(line, &one) == nil {
		msgs = []message{one}
	} else if json.Unmarshal(line, &msgs) != nil {
		return nil
	}
	for _, m := range msgs {
		var e entry
		switch m.Method {
		case "tools/call", "prompts/get":
			e = entry{Method: m.Method, Name: m.Params.Name, Arguments: m.Params.Arguments}
		case "resources/read":
			e = entry{Method: m.Method, URI: m.Params.URI}
		case "tools/list":
			e = entry{Method: m.Method}
		default:
			continue
		}
		if err := log.record(e); err != nil {
			return err
		}
	}
	return nil
}
