package spans

import (
	"fmt"
	"slices"
	"strings"
)

// maxOtherNames is how many names of unknown services MissingWarning
// lists.
const maxOtherNames = 5

// MissingWarning is the warning for service, whose calls were to be
// counted from its SERVER spans but none of whose SERVER spans started
// in the window counted (when, as "during pre-profiling"): its likely
// causes, from what r received over the whole run, and instead, what the
// run does without its counts. services names the run's services, so
// that spans under other names can be pointed out.
func (r *Receiver) MissingWarning(service, when string, services []string, instead string) string {
	st := r.Stats()
	var b strings.Builder
	fmt.Fprintf(&b, "%q sent no OpenTelemetry SERVER span %s, so its calls were not counted from spans: %s", service, when, strings.TrimSuffix(instead, "."))
	if n := st.Server[service]; n > 0 {
		// Its spans came, outside the window.
		fmt.Fprintf(&b, ". Its spans did reach slowpoke (%d SERVER spans), but none started in the window counted: they may be exported late (an OTEL_BSP_SCHEDULE_DELAY over %d ms) or its clock may be off", n, ExportDelay.Milliseconds())
	} else {
		fmt.Fprintf(&b, ". Likely causes: it has no OpenTelemetry SDK or zero-code agent; its SDK does not honour OTEL_EXPORTER_OTLP_ENDPOINT (%s), as where an exporter or endpoint is set in code; or its sampling is off (a sampler set in code, or OTEL_TRACES_SAMPLER in the spec over slowpoke's always_on)", r.Endpoint())
		var others []string
		for _, name := range st.Services() {
			if !slices.Contains(services, name) {
				others = append(others, fmt.Sprintf("%q", name))
			}
		}
		if len(others) > maxOtherNames {
			others = append(others[:maxOtherNames], "...")
		}
		if len(others) > 0 {
			fmt.Fprintf(&b, ". SERVER spans did arrive under other names (%s): an SDK that sets its service name in code, over OTEL_SERVICE_NAME, is not matched", strings.Join(others, ", "))
		}
	}
	switch {
	case st.Rejected == 1:
		b.WriteString(". An export was refused (oversized or malformed), which may have been its")
	case st.Rejected > 1:
		fmt.Fprintf(&b, ". %d exports were refused (oversized or malformed), which may have been its", st.Rejected)
	}
	b.WriteString(". See docs/opentelemetry.md")
	return b.String()
}
