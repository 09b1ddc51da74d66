package org.apache.uima.ducc.oracle;

import java.lang.reflect.Constructor;
import java.lang.reflect.Method;

/**
 * The harness's calls whose name or signature differs between DUCC releases, made by reflection so that one
 * driver source compiles against every release from 2.0.0 on (see README "Per-release differences").
 * Written for the harness: it only chooses which upstream method or constructor to call.
 */
public final class Compat {
    private Compat() { }

    /** Calls the first of the one-argument methods `names` that `target` has (later releases' names first). */
    public static void set(Object target, Object arg, String... names) {
        for (String name : names) {
            for (Method m : target.getClass().getMethods()) {
                if (m.getName().equals(name) && m.getParameterCount() == 1) {
                    try {
                        m.invoke(target, arg);
                        return;
                    } catch (ReflectiveOperationException e) {
                        throw new RuntimeException(name, e);
                    }
                }
            }
        }
        throw new IllegalStateException("none of " + String.join(", ", names) + " on " + target.getClass());
    }

    /** Calls the one-argument method `name` if this release has it; returns whether it did. */
    public static boolean setIfPresent(Object target, Object arg, String name) {
        for (Method m : target.getClass().getMethods()) {
            if (m.getName().equals(name) && m.getParameterCount() == 1) {
                set(target, arg, name);
                return true;
            }
        }
        return false;
    }

    /** The first of the enum constants `names` that this release's `type` has. */
    public static <E extends Enum<E>> E constant(Class<E> type, String... names) {
        for (String name : names) {
            for (E e : type.getEnumConstants()) if (e.name().equals(name)) return e;
        }
        throw new IllegalStateException("none of " + String.join(", ", names) + " in " + type);
    }

    /**
     * A new `type` from the public constructor with as many parameters as `args` has, trying the longest
     * prefix of `args` first (later releases added trailing parameters). An int parameter receives a long
     * argument narrowed (2.0.x DuccReservation counts shares where later releases count bytes; the RM reads
     * neither).
     */
    public static <T> T make(Class<T> type, Object... args) {
        for (int n = args.length; n > 0; n--) {
            for (Constructor<?> c : type.getConstructors()) {
                if (c.getParameterCount() != n) continue;
                Object[] a = new Object[n];
                Class<?>[] p = c.getParameterTypes();
                boolean fits = true;
                for (int i = 0; i < n && fits; i++) {
                    a[i] = args[i];
                    if (p[i] == int.class && args[i] instanceof Long) a[i] = (int) (long) (Long) args[i];
                    else if (p[i] == long.class) fits = args[i] instanceof Long;
                    else if (p[i] == boolean.class) fits = args[i] instanceof Boolean;
                    else if (p[i] == int.class) fits = args[i] instanceof Integer || args[i] instanceof Long;
                    else fits = args[i] == null || p[i].isInstance(args[i]);
                }
                if (!fits) continue;
                try {
                    return type.cast(c.newInstance(a));
                } catch (ReflectiveOperationException e) {
                    throw new RuntimeException(type.getName(), e);
                }
            }
        }
        throw new IllegalStateException("no constructor of " + type + " fits");
    }
}
