import { describe, expect, it } from 'vitest';
import { installationKeyOf, teamKeyOf } from '../../src/installations/installation-key.js';

describe('installation keys', () => {
  it('keys an org-wide install by its enterprise, never by the workspace it was installed from', () => {
    expect(installationKeyOf({ isEnterpriseInstall: true, enterpriseId: 'E1', teamId: 'T1' })).toBe(
      'enterprise:E1',
    );
  });

  it('keys any other install by its workspace, also inside an org', () => {
    expect(installationKeyOf({ isEnterpriseInstall: false, enterpriseId: 'E1', teamId: 'T1' })).toBe(
      'team:T1',
    );
    expect(installationKeyOf({ isEnterpriseInstall: false, teamId: 'T1' })).toBe(teamKeyOf('T1'));
  });

  it('names no installation when the id its kind is keyed by is missing', () => {
    expect(installationKeyOf({ isEnterpriseInstall: true, teamId: 'T1' })).toBeUndefined();
    expect(installationKeyOf({ isEnterpriseInstall: true, enterpriseId: '', teamId: 'T1' })).toBeUndefined();
    expect(installationKeyOf({ isEnterpriseInstall: false, enterpriseId: 'E1' })).toBeUndefined();
    expect(installationKeyOf({ isEnterpriseInstall: false, teamId: '' })).toBeUndefined();
  });

  it('keeps a workspace and an org with the same id apart', () => {
    expect(teamKeyOf('X1')).toBe('team:X1');
    expect(installationKeyOf({ isEnterpriseInstall: true, enterpriseId: 'X1' })).not.toBe(teamKeyOf('X1'));
  });
});
