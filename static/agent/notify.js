// Opt-in sound and desktop notifications for news in the console (docs/accessibility.md
// A51): both off by default, each a checkbox the agent turns on. The desktop permission is
// asked for only inside that click (browsers refuse or penalise an unprompted
// Notification.requestPermission). The sound is a short tone made with Web Audio, so no
// audio file has to be allowed by the page's CSP (`default-src 'none'` has no media-src).
// The choices are kept in this browser's localStorage (the console is a first-party page).

const STORAGE_KEY = 'agentConsole.notifications';

function loadChoices() {
  try {
    return JSON.parse(localStorage.getItem(STORAGE_KEY)) || {};
  } catch {
    return {};
  }
}

function saveChoices(choices) {
  try {
    localStorage.setItem(STORAGE_KEY, JSON.stringify(choices));
  } catch {
    // storage refused: the choice lasts for this page only
  }
}

export class Notifier {
  constructor({ sound, desktop, title, onDenied }) {
    this.soundBox = sound;
    this.desktopBox = desktop;
    this.title = title;
    this.audio = null;
    const choices = loadChoices();
    const canNotify = typeof Notification !== 'undefined';
    sound.checked = Boolean(choices.sound);
    desktop.checked =
      Boolean(choices.desktop) && canNotify && Notification.permission === 'granted';
    sound.addEventListener('change', () => {
      // Created inside the click: browsers start an AudioContext only after a gesture.
      if (sound.checked) this.audioContext();
      this.save();
    });
    desktop.addEventListener('change', async () => {
      if (!desktop.checked) return this.save();
      if (!canNotify) {
        desktop.checked = false;
        onDenied();
        return;
      }
      const permission =
        Notification.permission === 'default'
          ? await Notification.requestPermission()
          : Notification.permission;
      if (permission !== 'granted') {
        desktop.checked = false;
        onDenied();
      }
      this.save();
    });
  }

  save() {
    saveChoices({ sound: this.soundBox.checked, desktop: this.desktopBox.checked });
  }

  audioContext() {
    const AudioContext = globalThis.AudioContext || globalThis.webkitAudioContext;
    if (!AudioContext) return null;
    if (!this.audio) this.audio = new AudioContext();
    if (this.audio.state === 'suspended') this.audio.resume().catch(() => {});
    return this.audio;
  }

  notify(text) {
    if (this.soundBox.checked) this.beep();
    if (this.desktopBox.checked && Notification.permission === 'granted') {
      try {
        new Notification(this.title, { body: text });
      } catch {
        // a browser that allows notifications only from a service worker: none is shown
      }
    }
  }

  beep() {
    const audio = this.audioContext();
    if (!audio) return;
    const oscillator = audio.createOscillator();
    const gain = audio.createGain();
    oscillator.frequency.value = 880;
    gain.gain.setValueAtTime(0.15, audio.currentTime);
    gain.gain.exponentialRampToValueAtTime(0.001, audio.currentTime + 0.3);
    oscillator.connect(gain).connect(audio.destination);
    oscillator.start();
    oscillator.stop(audio.currentTime + 0.3);
  }
}
