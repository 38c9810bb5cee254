/** The last reconcile's verdict, worded as `tally status` words it (one source: the domain rule). */
export { reconcileVerdict } from '../../domain/reading/reconcile-verdict';
