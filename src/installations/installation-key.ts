/**
 * Where an installation is kept, as Slack documents installations: an organisation-wide install (Enterprise
 * Grid, `is_enterprise_install`) by its enterprise id, any other by its workspace's team id, also inside an
 * organisation. Keying an org install by a team id is the classic mistake: every event then finds none.
 */
export interface InstallationRef {
  teamId?: string;
  enterpriseId?: string;
  isEnterpriseInstall: boolean;
}

export type InstallationKey = `enterprise:${string}` | `team:${string}`;

/** undefined: the ref names no installation (an org install without its enterprise id, a team install without its team). */
export function installationKeyOf(ref: InstallationRef): InstallationKey | undefined {
  if (ref.isEnterpriseInstall) return ref.enterpriseId ? `enterprise:${ref.enterpriseId}` : undefined;
  return ref.teamId ? `team:${ref.teamId}` : undefined;
}

/** The workspace install a team would have, whatever else serves it. */
export function teamKeyOf(teamId: string): InstallationKey {
  return `team:${teamId}`;
}
