package org.apache.uima.ducc.rm.scheduler;

import java.io.*;
import java.lang.reflect.Field;
import java.text.SimpleDateFormat;
import java.util.*;

import org.apache.uima.ducc.common.Node;
import org.apache.uima.ducc.common.utils.id.DuccId;
import org.apache.uima.ducc.rm.OracleRM;
import org.apache.uima.ducc.oracle.Json;
import org.apache.uima.ducc.oracle.SimClock;
import org.apache.uima.ducc.transport.event.common.IDuccTypes.DuccType;

/**
 * Lives in the scheduler package to read package-private state. Reads the RM's own Java objects right after a published schedule and writes one JSON line (truth.jsonl).
 * Fields are read through public getters where they exist and by reflection otherwise.
 * The defrag section and the per-job needy fields come from what OracleNodepoolScheduler recorded during the
 * scheduling pass; `published` says whether the job is in the RmStateDuccEvent that the pass dispatched.
 */
public class OracleTruth {
    final Writer out;
    final SimpleDateFormat fmt = new SimpleDateFormat("dd MMM yyyy HH:mm:ss,SSS", Locale.US);

    public OracleTruth(String file) throws IOException {
        out = new BufferedWriter(new FileWriter(file), 1 << 16);
        fmt.setTimeZone(TimeZone.getTimeZone("UTC"));
    }
    public void close() throws IOException { out.close(); }

    static Object f(Object o, String name) {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try { Field fl = c.getDeclaredField(name); fl.setAccessible(true); return fl.get(o); }
            catch (NoSuchFieldException e) { }
            catch (IllegalAccessException e) { throw new RuntimeException(e); }
        }
        return null;
    }

    @SuppressWarnings("unchecked")
    public void capture(int cycle, long epoch, long t, OracleRM rm, JobManagerUpdate u, Map<DuccId, ?> published) {
        Scheduler sched = (Scheduler) rm.getScheduler();
        Map<String, Object> rec = new LinkedHashMap<>();
        rec.put("cycle", cycle); rec.put("epoch", epoch); rec.put("t", t);
        rec.put("time", fmt.format(new Date(SimClock.EPOCH + t)));

        Map<DuccId, IRmJob> all = (Map<DuccId, IRmJob>) f(sched, "allJobs");
        List<IRmJob> jobs = new ArrayList<>(all.values());
        jobs.sort(Comparator.comparingLong(j -> j.getId().getFriendly()));
        Map<DuccId, HashMap<Share, Share>> exp = u.getExpandedShares(), shr = u.getShrunkenShares();
        Map<IRmJob, Integer> needy = OracleNodepoolScheduler.needy();
        List<Object> jl = new ArrayList<>();
        for (IRmJob j : jobs) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("id", j.getId().getFriendly());
            DuccType dt = j.getDuccType();
            m.put("type", dt == null ? null : dt.toString());
            m.put("ap", j.isArbitraryProcess());
            m.put("user", f(j, "username"));
            m.put("class", f(j, "resource_class_name"));
            ResourceClass rc = j.getResourceClass();
            m.put("policy", rc == null ? null : rc.getPolicy().toString());
            m.put("nodepool", rc == null ? null : rc.getNodepoolName());
            m.put("memory", f(j, "memory"));
            m.put("order", j.getShareOrder());
            m.put("max_shares", j.getMaxShares());
            m.put("given_by_order", f(j, "given_by_order"));
            m.put("wanted_by_order", f(j, "wanted_by_order"));
            m.put("nshares_given", j.countNSharesGiven());
            m.put("qshares_given", j.countQSharesGiven());
            m.put("pure_fair_share", j.getPureFairShare());
            m.put("job_cap", f(j, "job_cap"));
            m.put("nquestions", f(j, "nquestions"));
            m.put("remaining", f(j, "nquestions_remaining"));
            m.put("initialized", j.isInitialized());
            m.put("completed", j.isCompleted());
            m.put("refused", f(j, "refused"));
            m.put("deferred", f(j, "deferred"));
            m.put("reason", j.getReason());
            m.put("sched_state", j.isExpanded() ? "Expanded" : j.isShrunken() ? "Shrunken" : j.isStable() ? "Stable" : j.isDormant() ? "Dormant" : null);
            Integer nc = needy.get(j);
            m.put("needy", nc != null);
            m.put("needy_count", nc == null ? 0 : nc);
            m.put("in_needy_list", OracleNodepoolScheduler.inNeedyList(j));
            List<Object> sl = new ArrayList<>();
            List<Share> shares = new ArrayList<>(j.getAssignedShares().values());
            shares.sort(Comparator.comparingLong(s -> s.getId().getFriendly()));
            Map<Share, Share> prem = j.getPendingRemoves();
            for (Share s : shares) {
                Map<String, Object> sm = new LinkedHashMap<>();
                sm.put("id", s.getId().getFriendly());
                sm.put("host", s.getNodeIdentity().getCanonicalName());
                sm.put("order", s.getShareOrder());
                sm.put("pending", j.isPendingShare(s));
                sm.put("evicted", s.isEvicted());
                sm.put("purged", s.isPurged());
                sm.put("pending_remove", prem != null && prem.containsKey(s));
                sl.add(sm);
            }
            m.put("shares", sl);
            m.put("published", published != null && published.containsKey(j.getId()));
            m.put("added", ids(exp == null ? null : exp.get(j.getId())));
            m.put("preempted", ids(shr == null ? null : shr.get(j.getId())));
            jl.add(m);
        }
        rec.put("jobs", jl);

        List<Object> nl = new ArrayList<>();
        List<Machine> machines = new ArrayList<>();
        for (NodePool np : allPools(sched)) {
            for (Map<Node, Machine> mm : new Map[] { (Map<Node, Machine>) f(np, "allMachines"), (Map<Node, Machine>) f(np, "unresponsiveMachines"), (Map<Node, Machine>) f(np, "offlineMachines") })
                if (mm != null) for (Machine mc : mm.values()) if (mc.getNodepool() == np && !machines.contains(mc)) machines.add(mc);
        }
        machines.sort(Comparator.comparing(Machine::getId));
        for (Machine mc : machines) {
            NodePool np = mc.getNodepool();
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("name", mc.getId());
            m.put("nodepool", np.getId());
            m.put("memory_kb", mc.getMemory());
            m.put("order", mc.getShareOrder());
            m.put("free_qshares", f(mc, "shares_left"));
            m.put("virtual_free", mc.getVirtualShareOrder());
            Map<?, ?> act = (Map<?, ?>) f(mc, "activeShares");
            m.put("nshares", act == null ? 0 : act.size());
            String status = "online";
            Map<?, ?> un = (Map<?, ?>) f(np, "unresponsiveMachines"), off = (Map<?, ?>) f(np, "offlineMachines");
            if (un != null && un.containsKey(mc.getNode())) status = "unresponsive";
            if (off != null && off.containsKey(mc.getNode())) status = "offline";
            m.put("status", status);
            m.put("online", "online".equals(status));
            m.put("blacklisted", mc.isBlacklisted());
            nl.add(m);
        }
        rec.put("nodes", nl);
        Map<String, Object> defrag = new LinkedHashMap<>();
        List<IRmJob> nj = new ArrayList<>(needy.keySet());
        nj.sort(Comparator.comparingLong(j -> j.getId().getFriendly()));
        Map<String, Object> nm = new LinkedHashMap<>();
        for (IRmJob j : nj) nm.put(String.valueOf(j.getId().getFriendly()), needy.get(j));
        defrag.put("needy", nm);
        List<Object> tl = new ArrayList<>();
        for (OracleNodepoolScheduler.TftR x : OracleNodepoolScheduler.takeFromTheRichCalls()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("needy_job", x.needy.getId().getFriendly()); m.put("needed", x.needed); m.put("given", x.given);
            tl.add(m);
        }
        defrag.put("take_from_the_rich", tl);
        List<Object> al = new ArrayList<>();
        for (OracleNodepoolScheduler.Action x : OracleNodepoolScheduler.actions()) {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("action", x.action); m.put("share", x.share); m.put("host", x.host); m.put("order", x.order);
            m.put("donor_job", x.donor.getId().getFriendly()); m.put("needy_job", x.needy.getId().getFriendly());
            al.add(m);
        }
        defrag.put("actions", al);
        rec.put("defrag", defrag);
        try { out.write(Json.write(rec)); out.write('\n'); } catch (IOException e) { throw new RuntimeException(e); }
    }

    static List<Object> ids(Map<Share, Share> m) {
        List<Object> l = new ArrayList<>();
        if (m == null) return l;
        List<Long> ids = new ArrayList<>();
        for (Share s : m.keySet()) ids.add(s.getId().getFriendly());
        Collections.sort(ids); l.addAll(ids);
        return l;
    }

    @SuppressWarnings("unchecked")
    static List<NodePool> allPools(Scheduler sched) {
        List<NodePool> res = new ArrayList<>();
        Object nps = f(sched, "nodepools");
        Deque<NodePool> todo = new ArrayDeque<>();
        if (nps instanceof NodePool[]) for (NodePool np : (NodePool[]) nps) todo.add(np);
        else if (nps instanceof Collection) todo.addAll((Collection<NodePool>) nps);
        while (!todo.isEmpty()) {
            NodePool np = todo.poll();
            if (res.contains(np)) continue;
            res.add(np);
            Map<String, NodePool> ch = (Map<String, NodePool>) f(np, "children");
            if (ch != null) todo.addAll(ch.values());
        }
        return res;
    }
}
