// The logging cost curve's JVM server (bench/logcurve.sh): the stack of the 2014 DropWizard
// logging report, Jetty 9.4 and logback 1.2 from Debian's packages. `GET /work` writes
// `--lines` INFO lines, each with three fields, through SLF4J into logback's AsyncAppender in
// front of a FileAppender (the configuration file picks the mode), then answers `ok`, as the
// Rust server (bench/logcurve/src/main.rs) does. With `--lines 0` it is the bare Jetty. On
// SIGTERM it stops Jetty, stops logback (which writes what its queue holds) and prints the
// lines it emitted, for the script to set beside the lines the file holds.
//
//     java -Dlogback.configurationFile=logback-lossy.xml -Dlogcurve.file=/tmp/jvm.log \
//          -cp CLASSPATH LogCurve --lines 20

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.LongAdder;

import javax.servlet.http.HttpServletRequest;
import javax.servlet.http.HttpServletResponse;

import org.eclipse.jetty.server.Request;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import org.eclipse.jetty.server.handler.AbstractHandler;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import ch.qos.logback.classic.LoggerContext;

public final class LogCurve {
    private static final Logger LOG = LoggerFactory.getLogger("bench");
    private static final byte[] OK = "ok".getBytes(StandardCharsets.US_ASCII);
    private static final AtomicLong REQUESTS = new AtomicLong();
    private static final LongAdder EMITTED = new LongAdder();

    public static void main(String[] args) throws Exception {
        int lines = 5;
        String host = "127.0.0.1";
        int port = 0;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--lines":
                    lines = Integer.parseInt(args[++i]);
                    break;
                case "--port":
                    port = Integer.parseInt(args[++i]);
                    break;
                default:
                    System.err.println("unknown argument " + args[i] + "; expected --lines N [--port P]");
                    System.exit(2);
            }
        }
        final int n = lines;
        Server server = new Server();
        ServerConnector connector = new ServerConnector(server);
        connector.setHost(host);
        connector.setPort(port);
        server.addConnector(connector);
        server.setHandler(new AbstractHandler() {
            @Override
            public void handle(String target, Request base, HttpServletRequest request,
                    HttpServletResponse response) throws IOException {
                if (!"/work".equals(target)) {
                    return;
                }
                long id = REQUESTS.getAndIncrement();
                for (int line = 0; line < n; line++) {
                    LOG.info("handled a step request={} line={} user={}", id, line, "ada");
                }
                if (n > 0) {
                    EMITTED.add(n);
                }
                response.setStatus(200);
                response.setContentType("text/plain");
                response.setContentLength(OK.length);
                response.getOutputStream().write(OK);
                base.setHandled(true);
            }
        });
        server.start();
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                server.stop();
            } catch (Exception e) {
                System.err.println("stopping Jetty: " + e);
            }
            // Stops the AsyncAppender, which writes what its queue holds (maxFlushTime 0:
            // however long that takes), then the file appender.
            ((LoggerContext) LoggerFactory.getILoggerFactory()).stop();
            System.out.println("emitted " + EMITTED.sum() + " lines for " + REQUESTS.get() + " requests");
            System.out.flush();
            stopped.countDown();
        }));
        System.out.println("listening on " + host + ":" + connector.getLocalPort());
        System.out.flush();
        server.join();
        stopped.await();
    }
}
