package org.fluss.py.flink;

import org.junit.platform.engine.TestExecutionResult;
import org.junit.platform.launcher.TestExecutionListener;
import org.junit.platform.launcher.TestIdentifier;
import org.junit.platform.launcher.TestPlan;

/**
 * Prints one summary line at the end of the run, so {@code mvn -q test} (which hides surefire's own
 * INFO summary) still shows how many tests ran. Registered in META-INF/services.
 */
public class SummaryListener implements TestExecutionListener {
    private long start;
    private int ok;
    private int failed;
    private int skipped;

    @Override
    public void testPlanExecutionStarted(TestPlan testPlan) {
        start = System.nanoTime();
    }

    @Override
    public void executionSkipped(TestIdentifier id, String reason) {
        if (id.isTest()) {
            skipped++;
        }
    }

    @Override
    public void executionFinished(TestIdentifier id, TestExecutionResult result) {
        if (!id.isTest()) {
            return;
        }
        switch (result.getStatus()) {
            case SUCCESSFUL:
                ok++;
                break;
            case ABORTED:
                skipped++;
                break;
            default:
                failed++;
                System.out.println("FAILED: " + id.getDisplayName() + " "
                        + result.getThrowable().map(Throwable::toString).orElse(""));
        }
    }

    @Override
    public void testPlanExecutionFinished(TestPlan testPlan) {
        System.out.printf("Connector tests: %d run in %.1fs%n", ok + failed + skipped,
                (System.nanoTime() - start) / 1e9);
        System.out.printf("connector: %d passed, %d failed, %d skipped%n", ok, failed, skipped);
    }
}
