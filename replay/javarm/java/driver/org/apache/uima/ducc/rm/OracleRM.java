package org.apache.uima.ducc.rm;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.List;
import java.util.Timer;
import java.util.TimerTask;

import org.apache.camel.Message;
import org.apache.uima.ducc.common.admin.event.DuccAdminEvent;
import org.apache.uima.ducc.common.utils.SystemPropertyResolver;
import org.apache.uima.ducc.oracle.SimClock;
import org.apache.uima.ducc.rm.scheduler.JobManagerUpdate;
import org.apache.uima.ducc.transport.dispatcher.DuccEventDispatcher;
import org.apache.uima.ducc.transport.event.DuccEvent.EventType;
import org.apache.uima.ducc.transport.event.RmStateDuccEvent;

/**
 * Harness subclass of the real ResourceManagerComponent. It lives in the RM's package so it can set the
 * package-private fields that start() would set, and it runs one pass of the scheduling thread's loop body
 * on demand instead of a thread waiting on the monitor. Timer tasks go to the simulation's event queue.
 */
public class OracleRM extends ResourceManagerComponent {

    /** A java.util.Timer whose tasks are handed to the simulation instead of a timer thread. */
    public static class SimTimer extends Timer {
        public interface Sink { void at(long delayMs, TimerTask task); }
        private final Sink sink;
        public SimTimer(Sink sink) { super(true); this.sink = sink; }
        @Override public void schedule(TimerTask task, long delay) { sink.at(delay, task); }
    }

    public OracleRM(SimTimer.Sink timerSink) {
        super(null);
        stabilityTimer.cancel();
        stabilityTimer = new SimTimer(timerSink);
    }

    public JobManagerConverter getConverter() { return converter; }
    public long epoch() { return epoch_counter; }
    public int schedulingRatio() { return schedulingRatio; }

    /** What ResourceManagerComponent.start() does, minus Camel/JMX/admin channel and the threads. */
    public void boot(NodeStability ns, DuccEventDispatcher dispatcher, String stateEndpoint, String stateChangeEndpoint) throws Exception {
        setNodeStability(ns);
        // 2.2.0 and earlier: setTransportConfiguration(dispatcher, stateEndpoint), no stateChange endpoint
        Method stc = null;
        for (Method m : ResourceManagerComponent.class.getMethods())
            if (m.getName().equals("setTransportConfiguration") && (stc == null || m.getParameterCount() > stc.getParameterCount())) stc = m;
        if (stc.getParameterCount() == 3) stc.invoke(this, dispatcher, stateEndpoint, stateChangeEndpoint);
        else stc.invoke(this, dispatcher, stateEndpoint);
        converter = new JobManagerConverter(scheduler, stabilityManager);
        initStability         = SystemPropertyResolver.getIntProperty("ducc.rm.init.stability", DEFAULT_INIT_STABILITY_COUNT);
        nodeStability         = SystemPropertyResolver.getIntProperty("ducc.rm.node.stability", DEFAULT_STABILITY_COUNT);
        nodeMetricsUpdateRate = SystemPropertyResolver.getIntProperty("ducc.agent.node.metrics.publish.rate", DEFAULT_NODE_METRICS_RATE);
        schedulingRatio       = SystemPropertyResolver.getIntProperty("ducc.rm.state.publish.ratio", DEFAULT_SCHEDULING_RATIO);
        orPublishingRate      = SystemPropertyResolver.getIntProperty("ducc.orchestrator.state.publish.rate", DEFAULT_OR_PUBLISH_RATE);
        minRmPublishingRate   = orPublishingRate - DEFAULT_RM_PUBLISHING_SLOP;
        if ( minRmPublishingRate <= 0 ) minRmPublishingRate = DEFAULT_RM_PUBLISHING_SLOP;
        scheduler.init();
        startStabilityTimer();
        schedulerReady = true;
        // 2.2.1 on: start() ends with stateChange(BOOT) (the EventType constant BOOT came with it)
        for (Method m : ResourceManagerComponent.class.getDeclaredMethods()) {
            if (m.getName().equals("stateChange") && m.getParameterCount() == 1) {
                m.setAccessible(true);
                m.invoke(this, Enum.valueOf(EventType.class, "BOOT"));
            }
        }
    }

    /**
     * An administrator command (vary-off / vary-on) arriving on the admin channel: handed to the RM's own
     * RmAdminEventProcessor, as the Camel admin route would (the stubbed validateAdministrator accepts it).
     */
    public Object admin(DuccAdminEvent ev) {
        final Object[] body = { ev };
        Message msg = new Message() {
            public Object getBody() { return body[0]; }
            public void setBody(Object o) { body[0] = o; }
        };
        try {
            new RmAdminEventProcessor(this).process(() -> msg);
        } catch (Exception e) {
            throw new RuntimeException(e);
        }
        return body[0];
    }

    /** The body of ResourceManagerComponent.runScheduler() after wait() returns. Returns the update or null. */
    public JobManagerUpdate runSchedulerOnce() {
        String methodName = "runScheduler";
        JobManagerUpdate jobManagerUpdate = null;
        synchronized (this) {
            try {
                getLogger().info(methodName, null, "--------", epoch_counter, "------- Entering scheduling loop --------------------");
                jobManagerUpdate = scheduler.schedule();
                if ( jobManagerUpdate != null ) {
                    RmStateDuccEvent ev = converter.createState(jobManagerUpdate);
                    eventDispatcher.dispatch(stateEndpoint, ev, "");
                }
                getLogger().info(methodName, null, "--------", epoch_counter, "------- Scheduling loop returns  --------------------");
            } catch (Throwable e1) {
                getLogger().fatal(methodName, null, e1);
            }
        }
        return jobManagerUpdate;
    }
}
