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
// chromium, and a rank and a validate report of 43 services
// (html_many_test.go), at a desktop width and a phone's, and checks that
// the page logs no error, makes no network request but for its own file,
// does not overflow the phone's width, keeps the labels of its figures
// apart and inside them (labelProblems), and renders to something that is
// not blank. With SLOWPOKE_SCREENSHOT_DIR set, it writes the screenshots
// there (rank-wide.png, rank-narrow.png, validate-wide.png, ...,
// latency-narrow.png, rank-many-wide.png, ..., validate-many-narrow.png).
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
	manyRankPath := filepath.Join(dir, "rank-many.html")
	if err := WriteRankHTML(manyRankPath, manySampleRank()); err != nil {
		t.Fatal(err)
	}
	_, graph := manyServices()
	manyValidatePath := filepath.Join(dir, "validate-many.html")
	if err := WriteHTML(manyValidatePath, manyResults(KindValidate, manyPlanted, []float64{25, 50, 75}, []float64{31, 62, 70}, graph)); err != nil {
		t.Fatal(err)
	}
	shots := os.Getenv("SLOWPOKE_SCREENSHOT_DIR")

	for _, page := range []struct {
		name, path string
		labels     map[string]int // the least labels checked in its figures
	}{
		{"rank", rankPath, map[string]int{"call graph": 4, "gain bars": 6, "chart": 10}},
		{"validate", validatePath, map[string]int{"call graph": 4, "chart": 10}},
		{"pools", poolsPath, map[string]int{"chart": 5}},
		{"latency", latencyPath, map[string]int{"chart": 5}},
		// Every service's name in the call graph, and the calls and CPU
		// of the 36 ranked with results; its name and gain or verdict in
		// the bars.
		{"rank-many", manyRankPath, map[string]int{"call graph": 43 + 36, "gain bars": 2 * 43, "chart": 10}},
		{"validate-many", manyValidatePath, map[string]int{"call graph": 43 + 1, "chart": 10}},
	} {
		t.Run(page.name, func(t *testing.T) {
			views := []struct {
				name  string
				width int64
				shot  []byte
			}{{name: "wide", width: desktopWidth}, {name: "narrow", width: phoneWidth}}
			withBrowser(t, exe, func(ctx context.Context) {
				for i, view := range views {
					views[i].shot = checkInBrowser(t, ctx, page.path, view.width, page.labels)
				}
			})
			// After the browser, whose time is bounded: decoding a tall
			// page's screenshot takes seconds, tens under the race detector.
			for _, view := range views {
				checkScreenshot(t, page.path, view.width, view.shot)
				if shots != "" {
					name := filepath.Join(shots, page.name+"-"+view.name+".png")
					if err := os.WriteFile(name, view.shot, 0o644); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}

	// The checks must be able to fail: a page that fetches an image, logs
	// an error and draws a call graph with labels on top of each other
	// and past its edge has to be caught.
	t.Run("control", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "bad.html")
		page := `<!DOCTYPE html><html><head><meta charset="utf-8"><title>bad</title></head>` +
			`<body><p>bad</p><img src="http://127.0.0.1:9/x.png" alt=""><script>console.error("oops")</script>` +
			`<svg class="graph" viewBox="0 0 200 100" style="width: 200px"><text x="10" y="20">svc-checkout-pricing-07</text>` +
			`<text x="30" y="24">svc-checkout-tax-rules-08</text><text x="150" y="60">svc-checkout-promotions-09</text></svg></body></html>`
		if err := os.WriteFile(bad, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		withBrowser(t, exe, func(ctx context.Context) {
			problems, _, _, err := loadInBrowser(ctx, bad, desktopWidth)
			if err != nil {
				t.Fatal(err)
			}
			var request, consoleErr, overlap, leaves bool
			for _, p := range problems {
				request = request || strings.HasPrefix(p, "request ")
				consoleErr = consoleErr || strings.Contains(p, "oops")
				overlap = overlap || strings.Contains(p, `labels "svc-checkout-pricing-07"`) && strings.Contains(p, "overlap")
				leaves = leaves || strings.Contains(p, `label "svc-checkout-promotions-09"`) && strings.Contains(p, "leaves the figure")
			}
			if !request || !consoleErr || !overlap || !leaves {
				t.Errorf("the checks missed the control page's request (%v), console error (%v), overlapping labels (%v) or label past its figure (%v): %q",
					request, consoleErr, overlap, leaves, problems)
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

// checkInBrowser loads path in a new tab of the browser at width, reports
// what is wrong with the page, and returns its full-page screenshot (PNG).
// labels are the least labels the page's figures must have, by kind
// ("call graph", "gain bars", "chart"), so that a check of their boxes
// that finds no figure cannot pass for one that found nothing wrong.
func checkInBrowser(t *testing.T, ctx context.Context, path string, width int64, labels map[string]int) []byte {
	t.Helper()
	problems, shot, figs, err := loadInBrowser(ctx, path, width)
	if err != nil {
		t.Fatalf("%s at %dpx: %v", filepath.Base(path), width, err)
	}
	for _, p := range problems {
		t.Errorf("%s at %dpx: %s", filepath.Base(path), width, p)
	}
	found := map[string]int{}
	for _, f := range figs {
		kind := strings.TrimRight(f.Name, " 0123456789")
		found[kind] += len(f.Labels)
	}
	for kind, least := range labels {
		if found[kind] < least {
			t.Errorf("%s at %dpx: %d labels checked in the %s, want %d at least", filepath.Base(path), width, found[kind], kind, least)
		}
	}
	t.Logf("%s at %dpx: labels checked: %v", filepath.Base(path), width, found)
	return shot
}

// checkScreenshot checks the full-page screenshot (PNG) of path at width:
// as wide as the screen, reasonably tall and not blank.
func checkScreenshot(t *testing.T, path string, width int64, shot []byte) {
	t.Helper()
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
}

// loadInBrowser opens path in a new tab at width and returns what went
// wrong (console errors, exceptions, error log entries, requests other
// than for the file itself and data: URLs, a page wider than the screen,
// labels of its figures that overlap or leave their figure, node or the
// page), a full-page screenshot and the figures whose labels it checked.
func loadInBrowser(ctx context.Context, path string, width int64) (problems []string, shot []byte, figs []svgFigure, err error) {
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
		return nil, nil, nil, err
	}
	overflow, err := chromedp.Run(tabCtx, chromedp.Evaluate[int64](`document.documentElement.scrollWidth - document.documentElement.clientWidth`))
	if err != nil {
		return nil, nil, nil, err
	}
	if overflow > 0 {
		note("the page is %dpx wider than the %dpx screen", overflow, width)
	}
	figs, err = chromedp.Run(tabCtx, chromedp.Evaluate[[]svgFigure](figureLabelsJS))
	if err != nil {
		return nil, nil, nil, err
	}
	pageWidth, err := chromedp.Run(tabCtx, chromedp.Evaluate[float64](`document.documentElement.clientWidth`))
	if err != nil {
		return nil, nil, nil, err
	}
	for _, p := range labelProblems(figs, pageWidth) {
		note("%s", p)
	}
	shot, err = chromedp.Run(tabCtx, chromedp.FullScreenshot(100))
	if err != nil {
		return nil, nil, nil, err
	}
	mu.Lock()
	defer mu.Unlock()
	if !sawDocument {
		problems = append(problems, "saw no request for the document itself: is the network listener working?")
	}
	return problems, shot, figs, nil
}

// figureLabelsJS collects the boxes of the labels of the page's figures
// (labels_test.go): the call graph, the gain bars and the gonum/plot
// charts, each <svg> shown (not in a closed fold) with every text in it
// that shows something, in the page's coordinates. A text of the call
// graph comes with the box of its node.
const figureLabelsJS = `(() => {
  const box = r => ({X: r.left + window.scrollX, Y: r.top + window.scrollY, W: r.width, H: r.height});
  const figs = [];
  for (const [name, sel] of [["call graph", "svg.graph"], ["gain bars", "figure.bars svg"], ["chart", "figure.chart svg"]]) {
    document.querySelectorAll(sel).forEach((svg, i) => {
      const r = svg.getBoundingClientRect();
      if (!svg.checkVisibility() || r.width === 0 || r.height === 0) return; // in a closed fold
      const fig = {name: name + " " + (i + 1), box: box(r), labels: []};
      svg.querySelectorAll("text").forEach(t => {
        const b = t.getBoundingClientRect();
        if (b.width === 0 || b.height === 0 || t.textContent.trim() === "") return;
        const label = {text: t.textContent, box: box(b)};
        const node = svg.classList.contains("graph") && t.parentElement.querySelector(":scope > rect");
        if (node) label.node = box(node.getBoundingClientRect());
        fig.labels.push(label);
      });
      figs.push(fig);
    });
  }
  return figs;
})()`

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
