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
	"strconv"
	"strings"
	"testing"
)

// Screenshot saves the whole X screen as name.png under
// $AQLGUARD_ARTIFACTS (CI keeps that directory), or the test's temp
// directory, and returns the file. It uses xwd (x11-apps) and decodes the
// dump here, so no image tool is needed.
func Screenshot(t testing.TB, name string) string {
	t.Helper()
	img := grab(t)
	return save(t, artifactDir(t), name, img)
}

// ScreenshotWindow saves window w, with a margin of the screen around
// it, as name.png under $AQLGUARD_ARTIFACTS (or the test's temp
// directory), and returns the file and the image.
func ScreenshotWindow(t testing.TB, w, name string) (string, image.Image) {
	t.Helper()
	img := grab(t)
	x, y, width, height := Geometry(t, w)
	const margin = 12
	r := image.Rect(x-margin, y-margin, x+width+margin, y+height+margin).Intersect(img.Bounds())
	crop := image.NewRGBA(image.Rect(0, 0, r.Dx(), r.Dy()))
	for yy := r.Min.Y; yy < r.Max.Y; yy++ {
		for xx := r.Min.X; xx < r.Max.X; xx++ {
			crop.Set(xx-r.Min.X, yy-r.Min.Y, img.At(xx, yy))
		}
	}
	return save(t, artifactDir(t), name, crop), crop
}

// SavePNG writes img as dir/name.png and returns the file.
func SavePNG(t testing.TB, dir, name string, img image.Image) string {
	t.Helper()
	return save(t, dir, name, img)
}

// Geometry is window w's position and size (xdotool getwindowgeometry).
func Geometry(t testing.TB, w string) (x, y, width, height int) {
	t.Helper()
	for _, line := range strings.Fields(Do(t, "getwindowgeometry", "--shell", w)) {
		k, v, _ := strings.Cut(line, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "X":
			x = n
		case "Y":
			y = n
		case "WIDTH":
			width = n
		case "HEIGHT":
			height = n
		}
	}
	return x, y, width, height
}

// Has reports whether img has a run of at least n pixels, in one row,
// of the colour c (within a small tolerance): a button drawn in c.
func Has(img image.Image, c color.RGBA, n int) bool {
	b := img.Bounds()
	near := func(p color.Color) bool {
		r, g, bl, _ := p.RGBA()
		d := func(a uint32, b uint8) bool { x := int(a>>8) - int(b); return x > -12 && x < 12 }
		return d(r, c.R) && d(g, c.G) && d(bl, c.B)
	}
	for y := b.Min.Y; y < b.Max.Y; y++ {
		run := 0
		for x := b.Min.X; x < b.Max.X; x++ {
			if near(img.At(x, y)) {
				if run++; run >= n {
					return true
				}
			} else {
				run = 0
			}
		}
	}
	return false
}

func grab(t testing.TB) image.Image {
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
	return img
}

func artifactDir(t testing.TB) string {
	dir := os.Getenv("AQLGUARD_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	return dir
}

func save(t testing.TB, dir, name string, img image.Image) string {
	t.Helper()
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
