package org.apache.uima.ducc.rm.scheduler;

import java.util.*;

/**
 * Harness subclass of the real NodepoolScheduler (selected with ducc.rm.scheduler). It does not change the
 * scheduling: every override below calls the upstream method and only records what it was asked and what it
 * did, for the `defrag` section of truth.jsonl (OracleTruth). It also lets the truth extractor read
 * package-private state (needyJobs) from this package.
 * Its class name shows in the log; run.py rewrites "OracleNodepoolScheduler" to "NodepoolScheduler".
 *
 * Recorded per scheduling pass (Oracle calls resetDefrag() before each pass; with several top-level
 * nodepools there is one instance per pool and the records of all instances are concatenated in call order):
 *  - needy: the map doFinalEvictions() receives from detectFragmentation() (job -> processes needed);
 *  - takeFromTheRich(): needy job, `needed` argument, returned `given`, one entry per call, in call order;
 *  - clearShare(): the share, its host and order, the donor (the share's job before the call), the needy job,
 *    and what clearShare does with it: evict (not pending: shrinkByOne), reassign_pending (pending, same
 *    order as the needy job) or cancel_pending (pending, different order).
 */
public class OracleNodepoolScheduler extends NodepoolScheduler {
    public OracleNodepoolScheduler() { super(); }

    public static final class TftR { public final IRmJob needy; public final int needed, given;
        TftR(IRmJob n, int needed, int given) { this.needy = n; this.needed = needed; this.given = given; } }
    public static final class Action { public final String action; public final long share; public final String host;
        public final int order; public final IRmJob donor, needy;
        Action(String a, long s, String h, int o, IRmJob d, IRmJob n) { action = a; share = s; host = h; order = o; donor = d; needy = n; } }

    static final List<OracleNodepoolScheduler> instances = new ArrayList<>();
    static final LinkedHashMap<IRmJob, Integer> needy = new LinkedHashMap<>();
    static final List<TftR> tftr = new ArrayList<>();
    static final List<Action> actions = new ArrayList<>();

    { synchronized (instances) { instances.add(this); } }

    /** Called by the driver before every scheduling pass. */
    public static void resetDefrag() { needy.clear(); tftr.clear(); actions.clear(); }
    public static Map<IRmJob, Integer> needy() { return needy; }
    public static List<TftR> takeFromTheRichCalls() { return tftr; }
    public static List<Action> actions() { return actions; }

    /** Is the job in some instance's needyJobs list (the upstream field, read at capture)? */
    public static boolean inNeedyList(IRmJob j) {
        for (OracleNodepoolScheduler s : instances) if (s.needyJobs != null && s.needyJobs.containsKey(j)) return true;
        return false;
    }

    @Override
    void doFinalEvictions(HashMap<IRmJob, Integer> n) {
        for (Map.Entry<IRmJob, Integer> e : n.entrySet()) needy.put(e.getKey(), e.getValue());
        super.doFinalEvictions(n);
    }

    @Override
    int takeFromTheRich(IRmJob nj, int needed, TreeMap<User, User> users_by_wealth, HashMap<User, TreeMap<IRmJob, IRmJob>> jobs_by_user) {
        int pos = tftr.size();
        tftr.add(null);                                   // keep call order even if calls were ever nested
        int given = super.takeFromTheRich(nj, needed, users_by_wealth, jobs_by_user);
        tftr.set(pos, new TftR(nj, needed, given));
        return given;
    }

    @Override
    boolean clearShare(Share s, IRmJob nj) {
        String a = !s.isPending() ? "evict" : (s.getShareOrder() == nj.getShareOrder() ? "reassign_pending" : "cancel_pending");
        actions.add(new Action(a, s.getId().getFriendly(), s.getNodeIdentity().getCanonicalName(), s.getShareOrder(), s.getJob(), nj));
        return super.clearShare(s, nj);
    }
}
