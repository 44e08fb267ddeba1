package report

import (
	"bytes"
	"context"
	"fmt"
	"image"
	"image/png"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browserTimeout bounds everything one browser does, start-up included,
// so that a browser that hangs fails the test instead of holding it.
const browserTimeout = 30 * time.Second

// The widths the reports are looked at: a desktop and a phone.
const (
	desktopWidth = 1280
	phoneWidth   = 390
)

// TestHTMLInBrowser loads a rank, a validate, a pools and a latency report in headless
// chromium, at a desktop width and a phone's, and checks that the page
// logs no error, makes no network request but for its own file, does not
// overflow the phone's width, and renders to something that is not blank.
// With SLOWPOKE_SCREENSHOT_DIR set, it writes the screenshots there
// (rank-wide.png, rank-narrow.png, validate-wide.png, ..., latency-narrow.png).
//
// Without chromium the test is skipped, unless SLOWPOKE_REQUIRE_BROWSER=1
// (as in CI), which makes it fail.
func TestHTMLInBrowser(t *testing.T) {
	exe := findChromium()
	if exe == "" {
		if os.Getenv("SLOWPOKE_REQUIRE_BROWSER") == "1" {
			t.Fatal("SLOWPOKE_REQUIRE_BROWSER=1 but chromium is not installed")
		}
		t.Skip("chromium is not installed; set SLOWPOKE_REQUIRE_BROWSER=1 to fail instead")
	}
	dir := t.TempDir()
	rankPath := filepath.Join(dir, "rank.html")
	if err := WriteRankHTML(rankPath, htmlSampleRank()); err != nil {
		t.Fatal(err)
	}
	validatePath := filepath.Join(dir, "validate.html")
	if err := WriteHTML(validatePath, htmlSampleResults(KindValidate, "cart")); err != nil {
		t.Fatal(err)
	}
	poolsPath := filepath.Join(dir, "pools.html")
	if err := WritePoolsHTML(poolsPath, samplePools(t)); err != nil {
		t.Fatal(err)
	}
	latencyPath := filepath.Join(dir, "latency.html")
	if err := WriteLatencyHTML(latencyPath, latencyFixture()); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SLOWPOKE_SCREENSHOT_DIR")

	for _, page := range []struct{ name, path string }{{"rank", rankPath}, {"validate", validatePath}, {"pools", poolsPath}, {"latency", latencyPath}} {
		t.Run(page.name, func(t *testing.T) {
			withBrowser(t, exe, func(ctx context.Context) {
				for _, view := range []struct {
					name  string
					width int64
				}{{"wide", desktopWidth}, {"narrow", phoneWidth}} {
					shot := checkInBrowser(t, ctx, page.path, view.width)
					if shots != "" && shot != nil {
						name := filepath.Join(shots, page.name+"-"+view.name+".png")
						if err := os.WriteFile(name, shot, 0o644); err != nil {
							t.Error(err)
						}
					}
				}
			})
		})
	}

	// The checks must be able to fail: a page that fetches an image and
	// logs an error has to be caught.
	t.Run("control", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.html")
		page := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>bad</title></head>` +
			`<body><p>bad</p><img src="http://127.0.0.1:9/x.png" alt=""><script>console.error("oops")</script></body></html>`
		if err := os.WriteFile(bad, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		withBrowser(t, exe, func(ctx context.Context) {
			problems, _, err := loadInBrowser(ctx, bad, desktopWidth)
			if err != nil {
				t.Fatal(err)
			}
			var request, consoleErr bool
			for _, p := range problems {
				request = request || strings.HasPrefix(p, "request ")
				consoleErr = consoleErr || strings.Contains(p, "oops")
			}
			if !request || !consoleErr {
				t.Errorf("the checks missed the control page's request (%v) or console error (%v): %q", request, consoleErr, problems)
			}
		})
	})
}

// findChromium returns the path of Debian's chromium, or "".
func findChromium() string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// withBrowser starts a headless chromium for f, ends it when f returns,
// and checks that none of its processes remain.
func withBrowser(t *testing.T, exe string, f func(ctx context.Context)) {
	t.Helper()
	// chromedp makes the browser's profile under TMPDIR and gives its path
	// to every process of the browser, which is how the check below finds
	// them: this test's and no one else's.
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)

	ctx, cancel := context.WithTimeout(t.Context(), browserTimeout)
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.Headless,
		chromedp.NoSandbox, // tests run as root in CI
		chromedp.DisableGPU,
	)
	allocCtx, allocCancel := chromedp.NewExecAllocator(ctx, opts...)
	browserCtx, browserCancel := chromedp.NewContext(allocCtx)
	// Deferred, so that they run after a t.Fatal in f too.
	defer checkGone(t, "--user-data-dir="+tmp+string(filepath.Separator))
	defer allocCancel() // kills the browser and waits for it
	defer browserCancel()

	if err := chromedp.Do(browserCtx); err != nil { // starts the browser
		t.Fatalf("start %s: %v", exe, err)
	}
	f(browserCtx)
}

// checkGone fails the test if processes with an argument starting with
// prefix (the browser's profile, which only this test's browser uses)
// are still there a few seconds after the browser was ended, and kills
// them.
func checkGone(t *testing.T, prefix string) {
	t.Helper()
	var left []int
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if left = processesWithArg(prefix); len(left) == 0 || time.Now().After(deadline) {
			break
		}
	}
	if len(left) > 0 {
		t.Errorf("chromium processes %v outlived the test; killing them", left)
		for _, pid := range left {
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// processesWithArg returns the processes that have an argument starting
// with prefix.
func processesWithArg(prefix string) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		for _, arg := range bytes.Split(cmdline, []byte{0}) {
			if strings.HasPrefix(string(arg), prefix) {
				pids = append(pids, pid)
				break
			}
		}
	}
	return pids
}

// checkInBrowser loads path in a new tab of the browser at width and
// checks the page; it returns the full-page screenshot (PNG).
func checkInBrowser(t *testing.T, ctx context.Context, path string, width int64) []byte {
	t.Helper()
	problems, shot, err := loadInBrowser(ctx, path, width)
	if err != nil {
		t.Fatalf("%s at %dpx: %v", filepath.Base(path), width, err)
	}
	for _, p := range problems {
		t.Errorf("%s at %dpx: %s", filepath.Base(path), width, p)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	b := img.Bounds()
	if b.Dx() != int(width) {
		t.Errorf("%s at %dpx: the page is %dpx wide: it overflows the screen", filepath.Base(path), width, b.Dx())
	}
	if b.Dy() < 600 {
		t.Errorf("%s at %dpx: the page is only %dpx tall", filepath.Base(path), width, b.Dy())
	}
	colours, inked := inkStats(img)
	if colours < 32 || inked < 0.02 {
		t.Errorf("%s at %dpx: the screenshot looks blank: %d colours, %.1f%% of the pixels not white", filepath.Base(path), width, colours, inked*100)
	}
	t.Logf("%s at %dpx: %dx%d, %d colours, %.1f%% inked", filepath.Base(path), width, b.Dx(), b.Dy(), colours, inked*100)
	return shot
}

// loadInBrowser opens path in a new tab at width and returns what went
// wrong (console errors, exceptions, error log entries, requests other
// than for the file itself and data: URLs, a page wider than the screen)
// and a full-page screenshot.
func loadInBrowser(ctx context.Context, path string, width int64) (problems []string, shot []byte, err error) {
	docURL := (&url.URL{Scheme: "file", Path: path}).String()
	var mu sync.Mutex
	sawDocument := false
	note := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, fmt.Sprintf(format, args...))
	}
	listen := func(ev any) {
		// Runs in the tab's event loop: record and return.
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value)+a.Description)
				}
				note("console.error: %s", strings.Join(args, " "))
			}
		case *runtime.EventExceptionThrown:
			note("exception: %s", ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError {
				note("log error (%s): %s %s", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			switch u := ev.Request.URL; {
			case u == docURL:
				mu.Lock()
				sawDocument = true
				mu.Unlock()
			case strings.HasPrefix(u, "data:"):
			default:
				note("request %s", u)
			}
		}
	}
	tabCtx, cancel := chromedp.NewContext(ctx, chromedp.WithListener(listen))
	defer cancel()

	view := []chromedp.EmulateViewportOption{}
	if width < 600 {
		view = append(view, chromedp.EmulateMobile)
	}
	if err := chromedp.Do(tabCtx,
		chromedp.EmulateViewport(width, 900, view...),
		chromedp.Navigate(docURL),
		chromedp.WaitReady(chromedp.CSS("body")),
	); err != nil {
		return nil, nil, err
	}
	overflow, err := chromedp.Run(tabCtx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	if err != nil {
		return nil, nil, err
	}
	if overflow > 0 {
		note("the page is %dpx wider than the %dpx screen", overflow, width)
	}
	shot, err = chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if !sawDocument {
		problems = append(problems, "saw no request for the document itself: is the network listener working?")
	}
	return problems, shot, nil
}

// inkStats returns how many distinct colours img has (counting up to a
// thousand) and the share of its pixels that are not (nearly) white.
func inkStats(img image.Image) (colours int, inked float64) {
	b := img.Bounds()
	seen := map[[3]uint32]bool{}
	n := 0
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			if len(seen) < 1000 {
				seen[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
			}
			if r>>8 < 0xf0 || g>>8 < 0xf0 || bl>>8 < 0xf0 {
				n++
			}
		}
	}
	return len(seen), float64(n) / float64(max(1, b.Dx()*b.Dy()))
}
