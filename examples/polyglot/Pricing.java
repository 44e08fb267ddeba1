// pricing: the polyglot example's prices, in Java (JDK only). GET /price
// costs EXTRA_WORK_US microseconds of the handling thread's CPU time (the
// example's bottleneck; its ground-truth knob) and returns a price.
// Run from source: java Pricing.java (Java 11 or newer).

import com.sun.net.httpserver.HttpServer;
import java.io.IOException;
import java.io.OutputStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

public class Pricing {
    private static final ThreadMXBean THREADS = ManagementFactory.getThreadMXBean();

    // spin burns us microseconds of this thread's CPU time (not wall time:
    // a stopped process must not catch up after it is continued).
    static void spin(double us) {
        long end = THREADS.getCurrentThreadCpuTime() + (long) (us * 1000);
        while (THREADS.getCurrentThreadCpuTime() < end) {
            Thread.onSpinWait();
        }
    }

    public static void main(String[] args) throws IOException {
        int port = Integer.parseInt(System.getenv().getOrDefault("PORT", "19082"));
        double workUS = Double.parseDouble(System.getenv().getOrDefault("EXTRA_WORK_US", "2000"));
        AtomicLong n = new AtomicLong();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", port), 1024);
        server.createContext("/healthz", ex -> reply(ex, "ok\n"));
        server.createContext("/price", ex -> {
            spin(workUS);
            reply(ex, String.format("%.2f", 10 + (n.incrementAndGet() % 90) / 10.0));
        });
        server.setExecutor(Executors.newFixedThreadPool(16));
        server.start();
    }

    static void reply(com.sun.net.httpserver.HttpExchange ex, String body) throws IOException {
        byte[] b = body.getBytes(StandardCharsets.UTF_8);
        ex.getResponseHeaders().set("Content-Type", "text/plain");
        ex.sendResponseHeaders(200, b.length);
        try (OutputStream os = ex.getResponseBody()) {
            os.write(b);
        }
    }
}
