/**
 * Light or dark: the system's choice (prefers-color-scheme) unless the person picked one with the
 * switch, which is kept in localStorage. The theme in force is written to <html data-theme>, which
 * styles.css reads; with "system" it follows the system's changes while the page is open.
 */
import { useEffect, useState } from 'react';

export type ThemeChoice = 'system' | 'light' | 'dark';
const STORAGE_KEY = 'waygate:theme';
const DARK_QUERY = '(prefers-color-scheme: dark)';

export function storedTheme(): ThemeChoice {
  try {
    const value = localStorage.getItem(STORAGE_KEY);
    return value === 'light' || value === 'dark' ? value : 'system';
  } catch {
    return 'system';
  }
}

function resolve(choice: ThemeChoice): 'light' | 'dark' {
  if (choice !== 'system') return choice;
  return window.matchMedia(DARK_QUERY).matches ? 'dark' : 'light';
}

let stopFollowing = (): void => undefined;

/** Applies a choice (default: the stored one) now, and follows the system while it is "system". */
export function applyTheme(choice: ThemeChoice = storedTheme()): void {
  stopFollowing();
  const apply = (): void => {
    document.documentElement.dataset.theme = resolve(choice);
  };
  apply();
  if (choice !== 'system') {
    stopFollowing = () => undefined;
    return;
  }
  const media = window.matchMedia(DARK_QUERY);
  media.addEventListener('change', apply);
  stopFollowing = () => media.removeEventListener('change', apply);
}

/** The switch's state: the choice, and a setter that stores and applies it. */
export function useTheme(): [ThemeChoice, (choice: ThemeChoice) => void] {
  const [choice, setChoice] = useState<ThemeChoice>(storedTheme);
  useEffect(() => {
    applyTheme(choice);
  }, [choice]);
  const set = (next: ThemeChoice): void => {
    try {
      if (next === 'system') localStorage.removeItem(STORAGE_KEY);
      else localStorage.setItem(STORAGE_KEY, next);
    } catch {
      // Storage refused (private mode): the choice holds for this page only.
    }
    setChoice(next);
  };
  return [choice, set];
}
