package org.apache.uima.ducc.oracle;

import java.io.*;
import java.nio.file.*;
import java.util.*;

import org.apache.log4j.LogManager;
import org.apache.uima.ducc.common.DuccNode;
import org.apache.uima.ducc.common.admin.event.RmAdminVaryOff;
import org.apache.uima.ducc.common.admin.event.RmAdminVaryOn;
import org.apache.uima.ducc.common.NodeIdentity;
import org.apache.uima.ducc.common.component.AbstractDuccComponent;
import org.apache.uima.ducc.common.node.metrics.NodeMemoryInfo;
import org.apache.uima.ducc.common.node.metrics.NodeMetrics;
import org.apache.uima.ducc.common.utils.id.DuccId;
import org.apache.uima.ducc.rm.NodeStability;
import org.apache.uima.ducc.rm.OracleRM;
import org.apache.uima.ducc.rm.event.ResourceManagerEventListener;
import org.apache.uima.ducc.rm.scheduler.JobManagerUpdate;
import org.apache.uima.ducc.rm.scheduler.OracleTruth;
import org.apache.uima.ducc.rm.scheduler.OracleNodepoolScheduler;
import org.apache.uima.ducc.rm.scheduler.SchedConstants;
import org.apache.uima.ducc.common.utils.SystemPropertyResolver;
import org.apache.uima.ducc.transport.dispatcher.DuccEventDispatcher;
import org.apache.uima.ducc.transport.event.NodeMetricsUpdateDuccEvent;
import org.apache.uima.ducc.transport.event.OrchestratorStateDuccEvent;
import org.apache.uima.ducc.transport.event.RmStateDuccEvent;
import org.apache.uima.ducc.transport.event.rm.IRmJobState;

/**
 * Oracle driver: runs the real DUCC RM on a simulated clock against a simulated Orchestrator (OrSim) and
 * simulated agents, and writes truth.jsonl (OracleTruth) after every published schedule. Node outages and
 * late arrivals are agent silence; nodes[].varyoff intervals are administrator vary-off / vary-on commands
 * handed to the RM's admin event processor (role thread T[17]). Stops after max_cycles published schedules,
 * at max_time_ms / end_ms, or (stop_when_idle) after the schedule that follows the first Orchestrator
 * publication holding nothing but JobDriver reservations (all other work submitted and gone).
 *
 * usage: Oracle scenario.json ducc_home_dir log_file truth_file|- info|debug
 * (the caller has already written ducc_home/resources/{ducc.properties,ducc.classes,log4j.xml,...})
 */
public class Oracle {
    static final int T_BOOT = 1, T_OR = 13, T_AGENT = 14, T_NODESTAB = 15, T_TIMER = 16, T_ADMIN = 17, T_SCHED = 19;
    static final int PH_TIMER = 0, PH_NODESTAB = 1, PH_AGENT = 2, PH_ADMIN = 3, PH_OR = 4;

    /** Discrete events: time, then phase (timer < node stability < agents < admin < OR), then insertion order. */
    static final class Ev implements Comparable<Ev> {
        final long t; final int phase; final long seq; final Runnable r;
        Ev(long t, int phase, long seq, Runnable r) { this.t = t; this.phase = phase; this.seq = seq; this.r = r; }
        public int compareTo(Ev o) {
            if (t != o.t) return Long.compare(t, o.t);
            if (phase != o.phase) return Integer.compare(phase, o.phase);
            return Long.compare(seq, o.seq);
        }
    }
    final PriorityQueue<Ev> queue = new PriorityQueue<>();
    long seq = 0;
    void at(long t, int phase, Runnable r) { queue.add(new Ev(t, phase, seq++, r)); }

    Map<String, Object> scen;
    OracleRM rm;
    NodeStability ns;
    ResourceManagerEventListener listener;
    OrSim or;
    OracleTruth truth;
    RmStateDuccEvent lastState;
    int cycles = 0, maxCycles;
    boolean done = false, stopWhenIdle = false;

    static class SimNode {
        String name, ip; long memGb; long arrive; List<long[]> outages = new ArrayList<>(), varyoff = new ArrayList<>();
        DuccNode node;
        boolean up(long t) {
            if (t < arrive) return false;
            for (long[] o : outages) if (t >= o[0] && t < o[1]) return false;
            return true;
        }
    }
    final List<SimNode> nodes = new ArrayList<>();

    @SuppressWarnings("unchecked")
    public static void main(String[] args) throws Exception {
        Oracle o = new Oracle();
        o.scen = (Map<String, Object>) Json.parse(new String(Files.readAllBytes(Paths.get(args[0])), "UTF-8"));
        o.run(args[1], args[3]);
    }

    static long num(Object o, long d) {
        if (o == null) return d;
        if (o instanceof Number) return ((Number) o).longValue();
        return Long.parseLong(o.toString().trim());
    }

    @SuppressWarnings("unchecked")
    void readNodes() throws Exception {
        for (Object x : (List<Object>) scen.get("nodes")) {
            Map<String, Object> m = (Map<String, Object>) x;
            List<String[]> names = new ArrayList<>();
            if (m.containsKey("pattern")) {
                String p = (String) m.get("pattern");
                long n = num(m.get("count"), 1), start = num(m.get("start"), 1);
                for (long k = 0; k < n; k++) {
                    long idx = start + k;
                    String name = p.contains("%") ? String.format(p, idx) : p + idx;
                    names.add(new String[] { name, null });
                }
            } else {
                names.add(new String[] { (String) m.get("name"), (String) m.get("ip") });
            }
            for (String[] nm : names) {
                SimNode s = new SimNode();
                s.name = nm[0];
                int k = nodes.size() + 2;                     // pattern nodes: <ip_prefix or 10.0>.k/256.k%256, k = 2, 3, ...
                s.ip = nm[1] != null ? nm[1] : (String) m.getOrDefault("ip_prefix", "10.0") + "." + (k / 256) + "." + (k % 256);
                s.memGb = num(m.get("memory_gb"), 32);
                s.arrive = num(m.get("arrive_ms"), 0);
                for (String key : new String[] { "outages", "varyoff" })
                    if (m.get(key) != null)
                        for (Object ou : (List<Object>) m.get(key)) {
                            List<Object> l = (List<Object>) ou;
                            long[] iv = new long[] { num(l.get(0), 0), l.size() > 1 && l.get(1) != null ? num(l.get(1), Long.MAX_VALUE) : Long.MAX_VALUE };
                            (key.equals("outages") ? s.outages : s.varyoff).add(iv);
                        }
                NodeIdentity ni = new NodeIdentity(s.ip, s.name);
                long kb = s.memGb * 1024L * 1024L;
                NodeMemoryInfo mem = new NodeMemoryInfo(new long[] { kb, kb, 0, 0 }, kb);
                NodeMetrics nm2 = Compat.make(NodeMetrics.class, ni, mem, null, null, new TreeMap<>(), false);  // 2.1.0-: 5 args
                s.node = new DuccNode(ni, nm2, false);
                nodes.add(s);
            }
        }
    }

    void run(String duccHome, String truthFile) throws Exception {
        SimClock.seed(num(scen.get("seed"), 1));
        Map<Long, Integer> shareBuckets = new HashMap<>();
        if (scen.get("share_buckets") instanceof Map)
            for (Map.Entry<?, ?> e : ((Map<?, ?>) scen.get("share_buckets")).entrySet())
                shareBuckets.put(Long.parseLong(String.valueOf(e.getKey())), (int) num(e.getValue(), 0));
        SimClock.shareBuckets(shareBuckets);
        SimClock.set(0);
        SimClock.tid(T_BOOT);
        stopWhenIdle = Boolean.TRUE.equals(scen.get("stop_when_idle"));
        maxCycles = (int) num(scen.get("max_cycles"), stopWhenIdle ? Integer.MAX_VALUE : 20);
        long hardStop = Math.min(num(scen.get("max_time_ms"), Long.MAX_VALUE), num(scen.get("end_ms"), Long.MAX_VALUE));

        AbstractDuccComponent.loadDuccProperties(duccHome + "/resources/ducc.properties");
        readNodes();

        rm = new OracleRM((delay, task) -> at(SimClock.t() + delay, PH_TIMER, () -> { SimClock.tid(T_TIMER); task.run(); }));
        // as ResourceManagerConfiguration does
        int nodeStab = SystemPropertyResolver.getIntProperty("ducc.rm.node.stability", SchedConstants.DEFAULT_STABILITY_COUNT);
        int metricsRate = SystemPropertyResolver.getIntProperty("ducc.agent.node.metrics.publish.rate", SchedConstants.DEFAULT_NODE_METRICS_RATE);
        int orRate = SystemPropertyResolver.getIntProperty("ducc.orchestrator.state.publish.rate", SchedConstants.DEFAULT_OR_PUBLISH_RATE);
        listener = new ResourceManagerEventListener(rm);
        ns = new NodeStability(rm, nodeStab, metricsRate);
        listener.setNodeStability(ns);
        listener.setEndpoint(System.getProperty("ducc.rm.state.update.endpoint"));

        or = new OrSim(scen, nodes);
        truth = truthFile.equals("-") ? null : new OracleTruth(truthFile);
        DuccEventDispatcher disp = new DuccEventDispatcher();
        disp.setSink((endpoint, ev) -> { if (ev instanceof RmStateDuccEvent) { lastState = (RmStateDuccEvent) ev; or.rmState(lastState, SimClock.t()); } });
        rm.boot(ns, disp, System.getProperty("ducc.rm.state.update.endpoint"), System.getProperty("ducc.daemons.state.change.endpoint"));

        // agents: every metricsRate from 0; node stability watchdog: every metricsRate from metricsRate/2;
        // Orchestrator: every orRate from orRate.
        at(0, PH_AGENT, agentTick(metricsRate));
        at(metricsRate / 2, PH_NODESTAB, nodeStabTick(metricsRate));
        at(orRate, PH_OR, orTick(orRate));
        // administrator vary-off / vary-on (nodes[].varyoff intervals), role thread T[17]
        for (SimNode s : nodes)
            for (long[] iv : s.varyoff) {
                at(iv[0], PH_ADMIN, () -> { SimClock.tid(T_ADMIN); rm.admin(new RmAdminVaryOff(new String[] { s.name }, "ducc", new byte[0])); });
                if (iv[1] != Long.MAX_VALUE)
                    at(iv[1], PH_ADMIN, () -> { SimClock.tid(T_ADMIN); rm.admin(new RmAdminVaryOn(new String[] { s.name }, "ducc", new byte[0])); });
            }

        while (!done && !queue.isEmpty()) {
            Ev e = queue.poll();
            if (e.t > hardStop) break;
            SimClock.set(e.t);
            e.r.run();
        }
        if (truth != null) truth.close();
        LogManager.shutdown();
    }

    Runnable agentTick(long rate) {
        return new Runnable() { public void run() {
            SimClock.tid(T_AGENT);
            long t = SimClock.t();
            for (SimNode s : nodes) {
                if (!s.up(t)) continue;
                try { listener.onNodeMetricsEvent(new NodeMetricsUpdateDuccEvent(s.node, 0)); }
                catch (Exception x) { throw new RuntimeException(x); }
            }
            at(t + rate, PH_AGENT, this);
        } };
    }

    Runnable nodeStabTick(long rate) {
        return new Runnable() { public void run() {
            SimClock.tid(T_NODESTAB);
            ns.tick();
            at(SimClock.t() + rate, PH_NODESTAB, this);
        } };
    }

    Runnable orTick(long rate) {
        return new Runnable() { public void run() {
            long t = SimClock.t();
            SimClock.tid(T_OR);
            OrchestratorStateDuccEvent ev = new OrchestratorStateDuccEvent();
            boolean idle = stopWhenIdle && or.idle();           // this publication holds JobDriver work only
            ev.setWorkMap(or.publish(t));
            long before = rm.epoch();
            try { listener.onOrchestratorStateUpdateEvent(ev); } catch (Exception x) { throw new RuntimeException(x); }
            long after = rm.epoch();
            if (after != before && (after % rm.schedulingRatio()) == 0) {
                SimClock.tid(T_SCHED);
                OracleNodepoolScheduler.resetDefrag();
                lastState = null;
                JobManagerUpdate u = rm.runSchedulerOnce();
                if (u != null) {
                    cycles++;
                    if (truth != null) truth.capture(cycles, after, t, rm, u, lastState == null ? null : lastState.getJobState());
                    if (cycles >= maxCycles || idle) done = true;
                }
            }
            at(t + rate, PH_OR, this);
        } };
    }
}
