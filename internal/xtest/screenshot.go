package xtest

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Screenshot saves the whole X screen as name.png under
// $AQLGUARD_ARTIFACTS (CI keeps that directory), or the test's temp
// directory, and returns the file. It uses xwd (x11-apps) and decodes the
// dump here, so no image tool is needed.
func Screenshot(t testing.TB, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), step)
	defer cancel()
	out, err := exec.CommandContext(ctx, "xwd", "-root", "-silent").Output()
	if err != nil {
		t.Fatalf("xwd: %v (apt-get install x11-apps)", err)
	}
	img, err := decodeXWD(out)
	if err != nil {
		t.Fatalf("decoding the screenshot: %v", err)
	}
	dir := os.Getenv("AQLGUARD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, name)
	path := filepath.Join(dir, safe+".png")
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
	return path
}

// decodeXWD decodes a 24/32-bit TrueColor ZPixmap X window dump.
func decodeXWD(d []byte) (image.Image, error) {
	if len(d) < 100 {
		return nil, errors.New("short xwd header")
	}
	h := make([]uint32, 25)
	for i := range h {
		h[i] = binary.BigEndian.Uint32(d[4*i:])
	}
	headerSize, format, width, height := h[0], h[2], int(h[4]), int(h[5])
	byteOrder, bpp, bpl := h[7], h[11], int(h[12])
	rmask, gmask, bmask, ncolors := h[14], h[15], h[16], h[19]
	if format != 2 || (bpp != 32 && bpp != 24) {
		return nil, fmt.Errorf("unsupported xwd: format %d, %d bits per pixel", format, bpp)
	}
	off := int(headerSize) + int(ncolors)*12
	if off+height*bpl > len(d) {
		return nil, errors.New("short xwd data")
	}
	img := image.NewRGBA(image.Rect(0, 0, width, height))
	chan8 := func(p, mask uint32) uint8 {
		v := (p & mask) >> bits.TrailingZeros32(mask)
		w := 32 - bits.LeadingZeros32(mask>>bits.TrailingZeros32(mask))
		return uint8(v << (8 - w) >> 0)
	}
	step := int(bpp / 8)
	for y := range height {
		row := d[off+y*bpl:]
		for x := range width {
			px := row[x*step : x*step+step]
			var p uint32
			if byteOrder == 0 { // LSBFirst
				for i := step - 1; i >= 0; i-- {
					p = p<<8 | uint32(px[i])
				}
			} else {
				for i := 0; i < step; i++ {
					p = p<<8 | uint32(px[i])
				}
			}
			img.Set(x, y, color.RGBA{chan8(p, rmask), chan8(p, gmask), chan8(p, bmask), 255})
		}
	}
	return img, nil
}
